package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestChannelsTravelThroughRun: the channels a caller sets on Run reach
// the tool on its Call, through a finish hook's pipeline too; Execute's
// call has none, and reporting to none is a no-op, not a panic.
func TestChannelsTravelThroughRun(t *testing.T) {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "p", nil)
	defer s.Dispose(0)
	_, err := reg.Register(s, tools.Definition{
		Name:        "work",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(_ context.Context, call tools.Call) (tools.Output, error) {
			for i := 1; i <= 3; i++ {
				call.Channels.ReportProgress(tools.Progress{Progress: float64(i), Total: 3, Message: "step"})
			}
			if yes, ok := call.Channels.OneShotAnswer(); ok {
				return tools.Output{Value: fmt.Sprint("one-shot ", yes)}, nil
			}
			return tools.Output{Value: "done"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg.OnFinish(s, "*", func(context.Context, tools.Finished) {})
	var got []tools.Progress
	ch := &tools.Channels{Progress: func(p tools.Progress) { got = append(got, p) }, OneShot: &tools.OneShot{Yes: true}}
	if !ch.WantsProgress() || (*tools.Channels)(nil).WantsProgress() {
		t.Error("WantsProgress does not tell a listening call from one without channels")
	}
	res := reg.Run(context.Background(), tools.Call{Caller: tools.Caller{Kind: "test"}, Name: "work", Channels: ch})
	if res.Err != nil || res.Value != "one-shot true" {
		t.Fatal(res.Err, res.Value)
	}
	want := []tools.Progress{{1, 3, "step"}, {2, 3, "step"}, {3, 3, "step"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	// Without channels, reporting is a no-op, not a panic.
	if res := reg.Execute(context.Background(), tools.Caller{Kind: "test"}, "work", nil); res.Err != nil || res.Value != "done" {
		t.Fatal(res.Err, res.Value)
	}
}
