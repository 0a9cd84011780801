package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestProgressTravelsThroughExecute(t *testing.T) {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "p", nil)
	defer s.Dispose(0)
	_, err := reg.Register(s, tools.Definition{
		Name:        "work",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ tools.Call) (tools.Output, error) {
			for i := 1; i <= 3; i++ {
				tools.ReportProgress(ctx, tools.Progress{Progress: float64(i), Total: 3, Message: "step"})
			}
			return tools.Output{Value: "done"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []tools.Progress
	ctx := tools.WithProgress(context.Background(), func(p tools.Progress) { got = append(got, p) })
	if !tools.WantsProgress(ctx) || tools.WantsProgress(context.Background()) {
		t.Error("WantsProgress does not tell a listening ctx from a plain one")
	}
	if res := reg.Execute(ctx, tools.Caller{Kind: "test"}, "work", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	want := []tools.Progress{{1, 3, "step"}, {2, 3, "step"}, {3, 3, "step"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	// Without a listener, reporting is a no-op, not a panic.
	if res := reg.Execute(context.Background(), tools.Caller{Kind: "test"}, "work", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
}
