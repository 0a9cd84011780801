package commands

import (
	"context"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

// RunWith hands the caller's back-channels to the handler as declared,
// each run its own; Run hands none, whatever the context carries.
func TestRunWithHandsChannels(t *testing.T) {
	r := New()
	var got []*tools.Channels
	if _, err := r.Register(testScope(t), Command{Name: "ask", Handler: func(_ context.Context, inv Invocation) Reply {
		got = append(got, inv.Channels)
		return Reply{}
	}}); err != nil {
		t.Fatal(err)
	}
	a, b := &tools.Channels{OneShot: &tools.OneShot{}}, &tools.Channels{}
	caller := tools.Caller{Kind: tools.CallerConsole}
	r.RunWith(context.Background(), caller, "/ask", a)
	r.RunWith(context.Background(), caller, "/ask", b)
	r.Run(context.Background(), caller, "/ask")
	if len(got) != 3 || got[0] != a || got[1] != b || got[2] != nil {
		t.Errorf("the handler got channels %v; want %p, %p, nil in turn", got, a, b)
	}
}
