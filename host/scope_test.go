package host

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestScopeDisposeOrder(t *testing.T) {
	s := NewScope(context.Background(), "t", testLogger(t))
	var got []string
	add := func(label string, err error) {
		s.OnDispose(label, func() error { got = append(got, label); return err })
	}
	add("first", nil)
	add("failing", errors.New("cannot close"))
	s.OnDispose("panicking", func() error { got = append(got, "panicking"); panic("boom") })
	add("last", nil)
	ev := NewEvent[int]("numbers")
	ev.On(s, func(int) { got = append(got, "handler") })

	if diff := cmp.Diff([]string{"first", "failing", "panicking", "last", "on numbers"}, s.Effects()); diff != "" {
		t.Errorf("effects (-want +got):\n%s", diff)
	}
	err := s.Dispose(time.Second)
	if diff := cmp.Diff([]string{"last", "panicking", "failing", "first"}, got); diff != "" {
		t.Errorf("dispose order (-want +got):\n%s", diff)
	}
	if err == nil || !strings.Contains(err.Error(), "failing: cannot close") || !strings.Contains(err.Error(), "panicking: panic: boom") {
		t.Errorf("Dispose = %v; want both failures joined", err)
	}
	if s.Context().Err() == nil {
		t.Error("the scope's context is not cancelled")
	}
	ev.Emit(1)
	if len(got) != 4 {
		t.Errorf("a handler outlived its scope: %q", got)
	}
	if err := s.Dispose(time.Second); err != nil || len(got) != 4 {
		t.Errorf("second Dispose = %v, ran %q; want a no-op", err, got)
	}
	// Registering late undoes at once, so nothing leaks.
	add("late", nil)
	if got[len(got)-1] != "late" {
		t.Errorf("a disposer registered after dispose did not run: %q", got)
	}
}

func TestScopeGoAndTimers(t *testing.T) {
	s := NewScope(context.Background(), "t", testLogger(t))
	stopped := make(chan struct{})
	s.Go("worker", func(ctx context.Context) {
		<-ctx.Done()
		close(stopped)
	})
	fired := make(chan struct{})
	s.AfterFunc("never", time.Hour, func() { close(fired) })
	if err := s.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Error("Dispose returned before the goroutine ended")
	}
	select {
	case <-fired:
		t.Error("a timer of the disposed scope fired")
	default:
	}
}

// TestScopeDisposeWaitsForRunningTimer: a dispose that comes while a timer's
// fn runs waits for it; with fn stuck, the dispose times out naming it.
func TestScopeDisposeWaitsForRunningTimer(t *testing.T) {
	s := NewScope(context.Background(), "t", testLogger(t))
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	s.AfterFunc("now", 0, func() {
		close(started)
		<-release
	})
	<-started
	err := s.Dispose(20 * time.Millisecond)
	if !errors.Is(err, ErrDisposeTimeout) || !strings.Contains(err.Error(), `"timer now"`) {
		t.Errorf("Dispose = %v; want it to wait for the running timer, and time out naming it", err)
	}
}

func TestScopeDisposeTimeout(t *testing.T) {
	s := NewScope(context.Background(), "t", testLogger(t))
	release := make(chan struct{})
	defer close(release)
	s.OnDispose("quick", func() error { return nil })
	s.OnDispose("stuck", func() error { <-release; return nil })
	err := s.Dispose(20 * time.Millisecond)
	if !errors.Is(err, ErrDisposeTimeout) || !strings.Contains(err.Error(), `"stuck"`) {
		t.Errorf("Dispose = %v; want a timeout naming the stuck disposer", err)
	}
}

// TestScopeDisposeTimeoutNamesThePendingDisposer: a timeout that fires
// before the disposing goroutine got to run (a stalled machine; here a
// 1ns timeout) names the disposer that was to run first, not "".
func TestScopeDisposeTimeoutNamesThePendingDisposer(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	for range 50 {
		s := NewScope(context.Background(), "t", slog.New(slog.DiscardHandler))
		s.OnDispose("stuck", func() error { <-release; return nil })
		err := s.Dispose(time.Nanosecond)
		if !errors.Is(err, ErrDisposeTimeout) || !strings.Contains(err.Error(), `"stuck" still running`) {
			t.Fatalf("Dispose = %v; want a timeout naming the stuck disposer", err)
		}
	}
}

func TestScopeGoAfterDispose(t *testing.T) {
	s := NewScope(context.Background(), "t", testLogger(t))
	if err := s.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	ran := false
	s.Go("late", func(ctx context.Context) {
		<-ctx.Done()
		ran = true
	})
	if !ran {
		t.Error("Go on a disposed scope returned before its goroutine ended")
	}
}

func TestEventsAndWaterfall(t *testing.T) {
	s := NewScope(context.Background(), "t", testLogger(t))
	ev := NewEvent[string]("words")
	var got []string
	ev.On(s, func(v string) { got = append(got, "first "+v) })
	removeSecond := ev.On(nil, func(v string) { got = append(got, "second "+v) })
	ev.On(s, func(v string) { got = append(got, "third "+v) })
	ev.Emit("a")
	removeSecond()
	removeSecond() // idempotent
	ev.Emit("b")
	want := []string{"first a", "second a", "third a", "first b", "third b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event handlers (-want +got):\n%s", diff)
	}

	w := NewWaterfall[string]("text")
	tag := func(name string) WaterfallHandler[string] {
		return func(ctx context.Context, v string, next Next[string]) (string, error) {
			out, err := next(ctx, v+" >"+name)
			return out + " <" + name, err
		}
	}
	w.On(s, tag("outer"))
	w.On(s, tag("inner"))
	last := func(ctx context.Context, v string) (string, error) { return v + " |last", nil }
	tests := []struct {
		name string
		last Next[string]
		want string
	}{
		{"earlier-registered is outer", last, "v >outer >inner |last <inner <outer"},
		{"nil last returns the value", nil, "v >outer >inner <inner <outer"},
	}
	for _, tt := range tests {
		if got, err := w.Run(context.Background(), "v", tt.last); err != nil || got != tt.want {
			t.Errorf("%s: Run = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}

	// A handler may answer without calling next: the inner ones and last
	// do not run.
	stop := w.On(nil, func(ctx context.Context, v string, next Next[string]) (string, error) {
		return "", errors.New("refused " + v)
	})
	if got, err := w.Run(context.Background(), "v", last); err == nil || err.Error() != "refused v >outer >inner" || got != " <inner <outer" {
		t.Errorf("short-circuit: Run = %q, %v", got, err)
	}
	stop()

	if err := s.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	got = nil
	ev.Emit("c")
	if len(got) != 0 {
		t.Errorf("handlers outlived their scope: %q", got)
	}
	if out, _ := w.Run(context.Background(), "v", nil); out != "v" {
		t.Errorf("waterfall after dispose = %q; want the value unchanged", out)
	}
}

// TestScopeCompositionFile: an instance's scope names the composition
// file the host runs, absolute, so that a plugin can find files beside
// it; a composition built in code, and a scope of no host, name none.
func TestScopeCompositionFile(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n")
	want, err := filepath.Abs("test.yml")
	if err != nil {
		t.Fatal(err)
	}
	if got := scopes(h)["a"].CompositionFile(); got != want {
		t.Errorf("CompositionFile = %q, want %q", got, want)
	}
	if err := h.Update(context.Background(), &Composition{Entries: []Entry{{ID: "b", Name: "test-noop"}}}); err != nil {
		t.Fatal(err)
	}
	if got := scopes(h)["b"].CompositionFile(); got != "" {
		t.Errorf("CompositionFile of a composition built in code = %q, want none", got)
	}
	s := NewScope(context.Background(), "alone", nil)
	defer s.Dispose(0)
	if got := s.CompositionFile(); got != "" {
		t.Errorf("NewScope's CompositionFile = %q, want none", got)
	}
}
