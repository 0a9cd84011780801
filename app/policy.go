package app

import (
	"context"
	"fmt"
	"strings"

	"bytes"
	"encoding/json"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/policy/pins"
)

// The policy answers through its slash commands (services/policy's
// command.go), which every composition with a policy registers: the
// policy offers no service of its own to look up.

// word refuses what would split a command line: a name with spaces.
func word(what, s string) error {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("%s %q is not a name (empty, or with spaces)", what, s)
	}
	return nil
}

func (req TrustRequest) target() (string, error) {
	if err := word("server", req.Server); err != nil {
		return "", err
	}
	if req.Tool == "" {
		return req.Server, nil
	}
	if err := word("tool", req.Tool); err != nil {
		return "", err
	}
	return req.Server + " " + req.Tool, nil
}

// Review runs `/policy review`.
func (l *Local) Review(ctx context.Context, req TrustRequest) (Review, error) {
	target, err := req.target()
	if err != nil {
		return Review{}, err
	}
	reply, err := l.Command(ctx, CommandRequest{Line: "/policy review " + target})
	if err != nil {
		return Review{}, err
	}
	r := Review{Text: reply.Text, Error: reply.Error}
	if !reply.Error {
		r.Digest, r.Pending = pins.ReviewDigest(reply.Text)
	}
	return r, nil
}

// Trust runs `/policy trust … --digest`.
func (l *Local) Trust(ctx context.Context, req TrustRequest) (commands.Reply, error) {
	target, err := req.target()
	if err != nil {
		return commands.Reply{}, err
	}
	if err := word("digest", req.Digest); err != nil {
		return commands.Reply{}, err
	}
	return l.Command(ctx, CommandRequest{Line: "/policy trust " + target + " --digest " + req.Digest})
}

// Explain runs `/policy explain`.
func (l *Local) Explain(ctx context.Context, req ExplainRequest) (commands.Reply, error) {
	caller := req.Caller
	if caller == "" {
		caller = "call"
	}
	words := append([]string{caller, req.Tool}, req.Groups...)
	if req.Subject != "" {
		words = append(words, req.Subject)
	}
	for _, w := range words {
		if err := word("name", w); err != nil {
			return commands.Reply{}, err
		}
	}
	line := "/policy explain --caller " + caller
	if req.Subject != "" {
		line += " --subject " + req.Subject
	}
	for _, g := range req.Groups {
		line += " --group " + g
	}
	line += " " + req.Tool
	if req.Args != "" {
		// One line: JSON that parses is compacted; anything else goes as
		// it is, and the policy says it cannot read it.
		var b bytes.Buffer
		if json.Compact(&b, []byte(req.Args)) == nil {
			line += " " + b.String()
		} else {
			line += " " + strings.ReplaceAll(req.Args, "\n", " ")
		}
	}
	return l.Command(ctx, CommandRequest{Line: line})
}
