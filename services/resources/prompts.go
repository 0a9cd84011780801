package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// Prompt is one prompt a server lists, with the name it goes by in the host
// (mcp__<server>__<prompt>, like the server's tools).
type Prompt struct {
	Server string `json:"server"`
	// Public is the host's name for it; Prompt.Name stays the server's.
	Public string `json:"public"`
	mcp.Prompt
}

// SetPrompts replaces the source's prompts. An unchanged list announces
// nothing. Its provider needs a GetPrompt.
func (src *Source) SetPrompts(prompts []Prompt) {
	r := src.r
	ps := make([]Prompt, 0, len(prompts))
	for _, p := range prompts {
		p.Server = src.p.Server
		ps = append(ps, p)
	}
	sig := promptSignature(ps)
	r.mu.Lock()
	if src.removed || sig == src.promptSig {
		r.mu.Unlock()
		return
	}
	src.prompts, src.promptSig = ps, sig
	staged := src.staged
	r.mu.Unlock()
	if staged {
		return // announced when it goes live
	}
	r.emit(Change{Kind: PromptsChanged, Server: src.p.Server})
}

func promptSignature(ps []Prompt) string {
	if len(ps) == 0 {
		return ""
	}
	b, err := json.Marshal(ps)
	if err != nil {
		// Cannot happen for these types; an always-new signature is safe.
		return fmt.Sprint(err, len(ps))
	}
	return string(b)
}

// Prompts returns every server's prompts, server by server in routing
// order, each server's in its own order.
func (r *Registry) Prompts() []Prompt {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Prompt
	for _, s := range r.sources {
		out = append(out, s.prompts...)
	}
	return out
}

// ErrUnknownPrompt marks a prompt name no server lists.
var ErrUnknownPrompt = errors.New("unknown prompt")

// LookupPrompt returns the prompt whose public name is public (the first,
// in routing order, if two servers share one).
func (r *Registry) LookupPrompt(public string) (Prompt, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.sources {
		if i := slices.IndexFunc(s.prompts, func(p Prompt) bool { return p.Public == public }); i >= 0 {
			return s.prompts[i], true
		}
	}
	return Prompt{}, false
}

// GetPrompt gets the prompt whose public name is public, with args, from
// its server; ch are the caller's back-channels, as Read's.
func (r *Registry) GetPrompt(ctx context.Context, public string, args map[string]string, ch *tools.Channels) (*mcp.GetPromptResult, error) {
	p, ok := r.LookupPrompt(public)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownPrompt, public)
	}
	r.mu.RLock()
	src := r.sourceLocked(p.Server)
	r.mu.RUnlock()
	if src == nil || src.p.GetPrompt == nil {
		return nil, fmt.Errorf("%w %q: server %s is gone", ErrUnknownPrompt, public, p.Server)
	}
	// The server checks the arguments: its answer is what its own clients
	// would see.
	return src.p.GetPrompt(ctx, p.Name, args, ch)
}

// Listed says the source's server has been listed once (or will not be
// soon: it gave up, or starts only when used), so that WaitListed stops
// waiting for it.
func (src *Source) Listed() {
	r := src.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if !src.listed {
		src.listed = true
		r.wakeLocked()
	}
}

func (r *Registry) wakeLocked() {
	close(r.wake)
	r.wake = make(chan struct{})
}

// WaitListed returns when every registered source has been listed once
// (Listed), or when ctx ends: a gateway's first client then sees what the
// servers starting with it offer.
func (r *Registry) WaitListed(ctx context.Context) error {
	for {
		r.mu.RLock()
		pending := slices.ContainsFunc(r.sources, func(s *Source) bool { return !s.listed })
		wake := r.wake
		r.mu.RUnlock()
		if !pending {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
