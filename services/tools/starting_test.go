package tools_test

import (
	"context"
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
	short, cancel := context.WithCancel(context.Background())
	cancel()
	if err := reg.WaitStarted(short); err == nil {
		t.Fatal("WaitStarted returned while two instances were starting")
	}
	doneA()
	doneA() // idempotent
	if err := reg.WaitStarted(short); err == nil {
		t.Fatal("WaitStarted returned while b was starting")
	}
	waited := make(chan error, 1)
	go func() { waited <- reg.WaitStarted(context.Background()) }()
	b.Dispose(time.Second)
	if err := <-waited; err != nil {
		t.Errorf("after b's dispose: %v", err)
	}
	a.Dispose(time.Second)
}
