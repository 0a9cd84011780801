package stdio

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// hostModeEnv makes TestNoOrphansAfterHostKill, in a re-executed test
// binary, play the host (runHost).
const hostModeEnv = "STDIO_TEST_HOST"

// runHost starts runChild's server through the production stdio transport,
// prints "<server pid> <grandchild pid>" and waits to be killed.
func runHost() {
	tr := childTransport(slog.New(slog.DiscardHandler))
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pids"})
	if err != nil || len(res.Content) == 0 {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	select {} // until SIGKILL
}

// TestNoOrphansAfterHostKill: a host killed with SIGKILL disposes nothing,
// yet its stdio server dies with it (the parent-death signal), even one
// that ignores SIGTERM and stdin's EOF (runChild). The server's own child,
// outside the kernel's reach, is what remains.
func TestNoOrphansAfterHostKill(t *testing.T) {
	if os.Getenv(hostModeEnv) != "" {
		runHost()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoOrphansAfterHostKill$")
	cmd.Env = append(os.Environ(), hostModeEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, out)
	}()
	var got string
	select {
	case got = <-line:
	case <-time.After(waitTimeout):
		t.Fatal("the host did not report its server's pid")
	}
	var pid, grandchild int
	if _, err := fmt.Sscanf(got, "%d %d", &pid, &grandchild); err != nil || pid == 0 || grandchild == 0 {
		t.Fatalf("host said %q (%v)", got, err)
	}
	// Whatever the outcome, nothing of it outlives the test.
	defer func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }()
	if !alive(pid) {
		t.Fatalf("the server %d is not running before the host is killed", pid)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	began := time.Now()
	mcptest.WaitFor(t, waitTimeout, "the server's death after its host's", func() bool { return !alive(pid) })
	t.Logf("server %d gone %s after the host was killed", pid, time.Since(began).Round(time.Millisecond))
	// Documented, not required: the grandchild (sleep, in the server's
	// process group) gets no signal; the deferred group kill ends it.
	t.Logf("the server's own child %d still running: %v", grandchild, alive(grandchild))
}
