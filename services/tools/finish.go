package tools

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/host"
)

// Finished is one call as it ended, for finish hooks (OnFinish): every
// call that named a tool, whatever its outcome (a refusal, an unknown
// tool, a tool error, a success).
type Finished struct {
	Caller Caller
	Name   string
	// Args are the arguments as the caller sent them (empty ones as `{}`),
	// before any pre-execute hook rewrote them.
	Args     json.RawMessage
	Result   Result
	Started  time.Time
	Duration time.Duration
	notes    *notes
}

// Note returns the value a hook of this call attached under key with
// SetNote, nil when none did.
func (f Finished) Note(key any) any {
	if f.notes == nil {
		return nil
	}
	return f.notes.get(key)
}

// FinishHook sees a call after it ended. It cannot change the result; it
// runs on the caller's goroutine, so it should be quick (write a line, count).
type FinishHook func(ctx context.Context, f Finished)

// OnFinish registers a hook for calls to tools whose name matches pattern,
// run in registration order once Execute has its Result (an audit trail).
// Guards and other hooks pass it facts of their own with SetNote.
func (r *Registry) OnFinish(s *host.Scope, pattern string, fn FinishHook) (remove func()) {
	return addHook(r, s, "finish hook", pattern, fn, func(h *hookSet) *[]*hook[FinishHook] { return &h.finish })
}

// SetNote attaches value under key to the call ctx belongs to (the ctx a
// hook or tool got from Execute), for the call's finish hooks
// (Finished.Note). Without finish hooks it does nothing. A call made from
// within another (mcp_call's child) has notes of its own.
func SetNote(ctx context.Context, key, value any) {
	if n, ok := ctx.Value(notesKey{}).(*notes); ok {
		n.set(key, value)
	}
}

// ParentNote returns the value a hook attached under key to the call
// that made the call ctx belongs to (mcp_call, for the tool it calls), nil
// when there is none or ctx's call was not made from within another. Like
// SetNote, it needs finish hooks: without any, calls keep no notes.
func ParentNote(ctx context.Context, key any) any {
	if n, ok := ctx.Value(notesKey{}).(*notes); ok && n.parent != nil {
		return n.parent.get(key)
	}
	return nil
}

type notesKey struct{}

// notes are a call's notes; few, so a slice.
type notes struct {
	mu     sync.Mutex
	kv     []any  // key, value, key, value...
	parent *notes // the notes of the call this one was made from within
}

func (n *notes) set(key, value any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := 0; i < len(n.kv); i += 2 {
		if n.kv[i] == key {
			n.kv[i+1] = value
			return
		}
	}
	n.kv = append(n.kv, key, value)
}

func (n *notes) get(key any) any {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := 0; i < len(n.kv); i += 2 {
		if n.kv[i] == key {
			return n.kv[i+1]
		}
	}
	return nil
}

// finishing runs the call through execute and then the finish hooks that
// match name.
func (r *Registry) finishing(ctx context.Context, hooks []*hook[FinishHook], caller Caller, name string, args json.RawMessage, ch *Channels) Result {
	parent, _ := ctx.Value(notesKey{}).(*notes)
	n := &notes{parent: parent}
	ctx = context.WithValue(ctx, notesKey{}, n)
	start := time.Now()
	res := r.execute(ctx, caller, name, args, ch)
	f := Finished{Caller: caller, Name: name, Args: normalizeArgs(args), Result: res, Started: start, Duration: time.Since(start), notes: n}
	for _, h := range hooks {
		if Match(h.pattern, name) {
			r.runFinish(ctx, h.fn, f)
		}
	}
	return res
}

func (r *Registry) runFinish(ctx context.Context, fn FinishHook, f Finished) {
	defer func() {
		if p := recover(); p != nil {
			_ = r.recovered("finish hook", f.Name, p)
		}
	}()
	fn(ctx, f)
}
