package stdio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// readyTransport hands go-sdk a connection made beforehand.
type readyTransport struct{ conn mcp.Connection }

func (r readyTransport) Connect(context.Context) (mcp.Connection, error) { return r.conn, nil }

// TestServerOutlivesTheThreadThatStartedIt: Linux sends the parent-death
// signal when the thread that forked the child exits, and Go ends a
// thread whose locked goroutine returns. A server started from such a
// goroutine (any code in the process may lock one) must live on.
func TestServerOutlivesTheThreadThatStartedIt(t *testing.T) {
	tr := childTransport(slog.New(slog.DiscardHandler))
	type started struct {
		conn mcp.Connection
		err  error
		tid  int
	}
	ch := make(chan started, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine.
		runtime.LockOSThread()
		conn, err := tr.Connect(context.Background())
		ch <- started{conn, err, syscall.Gettid()}
	}()
	s := <-ch
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.conn.Close()
	if s.tid == os.Getpid() {
		t.Skip("the goroutine ran on the main thread, which Go never ends")
	}
	mcptest.WaitFor(t, waitTimeout, "the starting thread's exit", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", s.tid))
		return errors.Is(err, fs.ErrNotExist)
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, readyTransport{s.conn}, nil)
	if err != nil {
		t.Fatalf("the server died with the thread that started it: %v", err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pids"}); err != nil {
		t.Fatalf("the server died with the thread that started it: %v", err)
	}
}
