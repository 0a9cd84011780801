package tools_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// WaitStarted waits for every instance that declared its tools still to
// come, until each says they came or its scope is disposed.
func TestWaitStarted(t *testing.T) {
	reg := tools.New(nil)
	if err := reg.WaitStarted(context.Background()); err != nil {
		t.Fatalf("nothing starting: %v", err)
	}
	a := host.NewScope(context.Background(), "a", nil)
	b := host.NewScope(context.Background(), "b", nil)
	doneA := reg.Starting(a)
	reg.Starting(b)
	if got := reg.StillStarting(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("StillStarting = %q, want a and b", got)
	}
	short, cancel := context.WithCancel(context.Background())
	cancel()
	if err := reg.WaitStarted(short); err == nil {
		t.Fatal("WaitStarted returned while two instances were starting")
	}
	doneA()
	doneA() // idempotent
	if got := reg.StillStarting(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("StillStarting after a's done = %q, want b", got)
	}
	if err := reg.WaitStarted(short); err == nil {
		t.Fatal("WaitStarted returned while b was starting")
	}
	waited := make(chan error, 1)
	go func() { waited <- reg.WaitStarted(context.Background()) }()
	b.Dispose(time.Second)
	if err := <-waited; err != nil {
		t.Errorf("after b's dispose: %v", err)
	}
	if got := reg.StillStarting(); len(got) != 0 {
		t.Errorf("StillStarting after b's dispose = %q, want none", got)
	}
	a.Dispose(time.Second)
}

// Changes counts a change as soon as it is made, one per registration and
// one per AssemblyChanged, so that a consumer can tell whether its copy of
// the assembly is current.
func TestChangesCountsEveryAssemblyChange(t *testing.T) {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "s", nil)
	defer s.Dispose(time.Second)
	before := reg.Changes()
	remove, err := reg.Register(s, tools.Definition{Name: "t", Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Changes(); got != before+1 {
		t.Errorf("Changes after a registration = %d, want %d", got, before+1)
	}
	reg.AssemblyChanged()
	remove()
	if got := reg.Changes(); got != before+3 {
		t.Errorf("Changes after AssemblyChanged and an unregistration = %d, want %d", got, before+3)
	}
}
