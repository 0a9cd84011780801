package stdio

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	if os.Getenv(probeModeEnv) != "" {
		runProbe()
		return
	}
	if os.Getenv(childModeEnv) != "" {
		runChild()
		return
	}
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every condition wait in these tests.
const waitTimeout = 10 * time.Second

// childModeEnv makes the test binary run as runChild's stdio MCP server
// (TestMain).
const childModeEnv = "STDIO_TEST_CHILD"

// runChild is the stdio server the test binary becomes in a child process
// (TestMain): the worst case for teardown. It ignores SIGTERM, keeps
// running after stdin EOF, and leaves a grandchild in its process group.
func runChild() {
	server := mcp.NewServer(&mcp.Implementation{Name: "child", Version: "1"}, nil)
	var grandchild int
	server.AddTool(&mcp.Tool{Name: "pids", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d %d", os.Getpid(), grandchild)}}}, nil
		})
	fmt.Fprintln(os.Stderr, "child says hello")
	fmt.Fprint(os.Stderr, "partial line without newline")
	signal.Ignore(syscall.SIGTERM)
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err == nil {
		grandchild = cmd.Process.Pid
	}
	_ = server.Run(context.Background(), &mcp.StdioTransport{})
	time.Sleep(time.Hour) // deaf to stdin EOF: only SIGKILL ends it
	os.Exit(0)
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesized command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// childTransport starts runChild's server.
func childTransport(logger *slog.Logger) *Transport {
	return &Transport{Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: map[string]string{childModeEnv: "1"}, Logger: logger}
}

// TestTeardownIsBounded: closing the connection of a server that ignores
// stdin's EOF and SIGTERM, and leaves a grandchild in its process group,
// ends both within the transport's bound, and its stderr is logged line
// by line, the unfinished last line included.
func TestTeardownIsBounded(t *testing.T) {
	logs := &mcptest.Logs{}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, childTransport(slog.New(logs)), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pids"})
	if err != nil {
		t.Fatal(err)
	}
	text := mcptest.Texts(res)
	var pid, grandchild int
	if _, err := fmt.Sscanf(strings.Join(text, ""), "%d %d", &pid, &grandchild); err != nil || grandchild == 0 {
		t.Fatalf("pids = %q (%v)", text, err)
	}
	began := time.Now()
	_ = cs.Close()
	took := time.Since(began)
	t.Logf("closing a server that ignores stdin EOF and SIGTERM took %s", took)
	// The bound, not a speed check: go-sdk's default teardown waits 5s
	// after closing stdin and 5s after SIGTERM before it sends SIGKILL to
	// this child; this transport takes 2 × terminateGrace (2s).
	if sdkDefault := 10 * time.Second; took >= sdkDefault {
		t.Errorf("close took %s: as long as go-sdk's default teardown", took)
	}
	if alive(pid) {
		t.Errorf("server process %d survived close", pid)
	}
	mcptest.WaitFor(t, waitTimeout, "the grandchild's end", func() bool { return !alive(grandchild) })
	var lines []string
	for _, r := range logs.Find(slog.LevelInfo, "server stderr") {
		lines = append(lines, r.Attrs)
	}
	if want := []string{"line=child says hello", "line=partial line without newline"}; strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("stderr lines = %q, want %q", lines, want)
	}
}
