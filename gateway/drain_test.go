package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestDrainFinishesCallsInFlight: once Drain is called, a request on an
// open session is refused with a reason, the call in flight finishes with
// its answer, and Drain returns when it has; a drain cut short by its
// context says how many requests are left.
func TestDrainFinishesCallsInFlight(t *testing.T) {
	reg := tools.New(nil)
	started, release := make(chan struct{}, 2), make(chan struct{})
	register(t, reg, tools.Definition{
		Name: "gate",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			started <- struct{}{}
			select {
			case <-release:
				return tools.Output{Value: "passed"}, nil
			case <-ctx.Done():
				return tools.Output{}, ctx.Err()
			}
		},
	})
	h := newHarness(t, reg, nil)
	call := func() <-chan *mcp.CallToolResult {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "gate"})
			if err != nil {
				t.Errorf("the call in flight: %v", err)
			}
			done <- res
		}()
		<-started
		return done
	}
	inFlight := call()

	// A drain cut short leaves the call running, and says so.
	cut, cancel := context.WithCancel(context.Background())
	cancel()
	if left := h.g.Drain(cut); left != 1 {
		t.Errorf("a cut drain left %d requests, want 1", left)
	}
	if !h.g.Draining() {
		t.Error("Draining() = false after Drain")
	}
	_, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "gate"})
	if err == nil || !strings.Contains(err.Error(), "draining") {
		t.Errorf("a new call during the drain: %v, want refused as draining", err)
	}

	drained := make(chan int, 1)
	go func() { drained <- h.g.Drain(context.Background()) }()
	close(release)
	if res := <-inFlight; res == nil || res.IsError {
		t.Errorf("the call in flight: %+v, want its answer", res)
	}
	if left := <-drained; left != 0 {
		t.Errorf("Drain left %d requests, want 0", left)
	}
}
