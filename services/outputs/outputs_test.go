package outputs

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// The tool is registered while some instance holds the offer, and only
// then.
func TestReadOutputOfferedWhileHeld(t *testing.T) {
	reg := tools.New(nil)
	newScope := func(id string) *host.Scope {
		return host.NewScope(context.Background(), id, slog.New(slog.DiscardHandler))
	}
	def := tools.Definition{Name: ToolName, InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil }}
	offer := NewOffer(newScope("mcp-output"), reg, &def)
	offered := func() bool { _, ok := reg.Get(ToolName); return ok }
	a, b := newScope("a"), newScope("b")
	for _, s := range []*host.Scope{a, b} {
		if err := offer.Hold(s); err != nil {
			t.Fatal(err)
		}
	}
	if !offered() {
		t.Fatal("not offered while held")
	}
	if err := a.Dispose(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !offered() {
		t.Fatal("withdrawn while b still holds it")
	}
	if err := b.Dispose(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if offered() {
		t.Fatal("still offered after the last holder left")
	}

}
