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

// TestParentNote: a call made from within another reads the notes of
// that call; a call made on its own reads none.
func TestParentNote(t *testing.T) {
	r := tools.New(nil)
	type key struct{}
	s := testScope(t)
	r.OnFinish(s, "*", func(context.Context, tools.Finished) {})
	r.OnGuard(s, "outer", func(ctx context.Context, _ tools.Call) error {
		tools.SetNote(ctx, key{}, "approved by outer")
		return nil
	})
	var seen []any
	r.OnGuard(s, "inner", func(ctx context.Context, _ tools.Call) error {
		seen = append(seen, tools.ParentNote(ctx, key{}))
		return nil
	})
	mustRegister(t, r, noop("inner"))
	mustRegister(t, r, tools.Definition{Name: "outer", Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
		res := r.Execute(ctx, call.Caller, "inner", nil)
		return tools.Output{Value: res.Value}, res.Err
	}})
	r.Execute(t.Context(), testCaller, "outer", nil)
	r.Execute(t.Context(), testCaller, "inner", nil)
	if want := []any{"approved by outer", nil}; !cmp.Equal(seen, want) {
		t.Errorf("inner's guard saw %v, want %v", seen, want)
	}
}
