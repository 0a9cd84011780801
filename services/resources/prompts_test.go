package resources

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

func promptProvider(server string) Provider {
	p := (&fake{server: server}).provider()
	p.GetPrompt = func(_ context.Context, name string, args map[string]string, _ *tools.Channels) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: server + " " + name + " " + args["x"]}}}}, nil
	}
	return p
}

func TestPromptsListGetAndChange(t *testing.T) {
	r := New(nil)
	s := scope(t, "consumer")
	var kinds []ChangeKind
	r.OnChange(s, func(c Change) { kinds = append(kinds, c.Kind) })

	sa := scope(t, "a")
	a, err := r.Register(sa, promptProvider("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Register(scope(t, "b"), promptProvider("b"))
	if err != nil {
		t.Fatal(err)
	}
	a.SetPrompts([]Prompt{{Public: "mcp__a__hi", Prompt: mcp.Prompt{Name: "hi"}}})
	a.SetPrompts([]Prompt{{Public: "mcp__a__hi", Prompt: mcp.Prompt{Name: "hi"}}}) // unchanged: no change announced
	b.SetPrompts([]Prompt{{Public: "mcp__b__hi", Prompt: mcp.Prompt{Name: "hi"}}, {Public: "mcp__b__yo", Prompt: mcp.Prompt{Name: "yo"}}})

	var got []string
	for _, p := range r.Prompts() {
		got = append(got, p.Server+":"+p.Public+":"+p.Name)
	}
	want := []string{"a:mcp__a__hi:hi", "b:mcp__b__hi:hi", "b:mcp__b__yo:yo"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("Prompts() = %v, want %v (routing order, server names kept)", got, want)
	}
	res, err := r.GetPrompt(context.Background(), "mcp__b__hi", map[string]string{"x": "1"}, nil)
	if err != nil || res.Messages[0].Content.(*mcp.TextContent).Text != "b hi 1" {
		t.Errorf("GetPrompt(mcp__b__hi) = %+v, %v; want b's prompt hi by its own name", res, err)
	}
	if _, err := r.GetPrompt(context.Background(), "mcp__c__hi", nil, nil); !errors.Is(err, ErrUnknownPrompt) {
		t.Errorf("GetPrompt of an unknown name: err = %v, want ErrUnknownPrompt", err)
	}
	if len(kinds) != 2 || kinds[0] != PromptsChanged || kinds[1] != PromptsChanged {
		t.Errorf("changes = %v, want two PromptsChanged (the unchanged list announces nothing)", kinds)
	}

	// The server's instance goes: its prompts go, and that is announced.
	if err := sa.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	if ps := r.Prompts(); len(ps) != 2 || ps[0].Server != "b" {
		t.Errorf("after a's dispose Prompts() = %+v, want b's only", ps)
	}
	if kinds[len(kinds)-1] != PromptsChanged {
		t.Errorf("changes = %v, want a PromptsChanged for a's going", kinds)
	}
}

func TestWaitListed(t *testing.T) {
	r := New(nil)
	if err := r.WaitListed(context.Background()); err != nil {
		t.Fatalf("WaitListed with no source: %v", err)
	}
	a, _ := r.Register(scope(t, "a"), promptProvider("a"))
	sb := scope(t, "b")
	if _, err := r.Register(sb, promptProvider("b")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.WaitListed(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitListed with two unlisted sources = %v, want it to wait until ctx ends", err)
	}
	done := make(chan error, 1)
	go func() { done <- r.WaitListed(context.Background()) }()
	a.Listed()
	a.Listed() // idempotent
	// b never lists; its going ends the wait too.
	if err := sb.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("WaitListed = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitListed did not return once a listed and b went")
	}
}
