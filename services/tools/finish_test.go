package tools_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestFinishSeesEveryOutcome: a finish hook sees successes, refusals,
// tool errors and unknown tools, with the original arguments and the notes
// a guard attached.
func TestFinishSeesEveryOutcome(t *testing.T) {
	r := tools.New(nil)
	rec := &recorder{}
	mustRegister(t, r, recordingTool(rec, "ok"))
	mustRegister(t, r, tools.Definition{Name: "boom", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		return tools.Output{}, errors.New("boom")
	}})
	mustRegister(t, r, recordingTool(rec, "denied"))
	type noteKey struct{}
	r.OnPreExecute(testScope(t), "ok", func(_ context.Context, c *tools.Call) error {
		c.Args = []byte(`{"rewritten":true}`)
		return nil
	})
	r.OnGuard(testScope(t), "*", func(ctx context.Context, c tools.Call) error {
		tools.SetNote(ctx, noteKey{}, "guard saw "+c.Name)
		if c.Name == "denied" {
			return errors.New("no")
		}
		return nil
	})
	var got []string
	r.OnFinish(testScope(t), "*", func(_ context.Context, f tools.Finished) {
		note, _ := f.Note(noteKey{}).(string)
		outcome := "ok"
		switch {
		case errors.Is(f.Result.Err, tools.ErrRefused):
			outcome = "refused"
		case errors.Is(f.Result.Err, tools.ErrUnknownTool):
			outcome = "unknown"
		case f.Result.Err != nil:
			outcome = "error"
		}
		got = append(got, f.Name+" "+string(f.Args)+" "+outcome+" "+note)
	})
	for _, name := range []string{"ok", "boom", "denied", "nope"} {
		r.Execute(context.Background(), testCaller, name, nil)
	}
	want := []string{
		"ok {} ok guard saw ok",
		"boom {} error guard saw boom",
		"denied {} refused guard saw denied",
		"nope {} unknown ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("finish hook saw (-want +got):\n%s", diff)
	}
}
