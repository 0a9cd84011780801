package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// startNotified starts serve --http over the fixture fx with NOTIFY_SOCKET
// set to socket; it returns once the gateway listens, with the log
// messages before that.
func startNotified(t *testing.T, ctx context.Context, socket string) (*gatewayProcess, []string) {
	t.Helper()
	file := writeComposition(t, fmt.Sprintf("plugins:\n  - {id: fx, name: mcp-client, config: {serverName: fx, transport: stdio, command: %q}}\n", mcptest.FixtureBinary(t)))
	cmd := command(t, ctx, "serve", "--http", "127.0.0.1:0", "--log-format", "json", "-c", file)
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+socket)
	logs := startLogging(t, cmd)
	var url string
	var before []string
	waitLog(t, logs, "the listener", func(m map[string]any) bool {
		url, _ = m["url"].(string)
		msg, _ := m["msg"].(string)
		before = append(before, msg)
		return msg == "gateway listening"
	})
	return &gatewayProcess{cmd: cmd, logs: logs, base: strings.TrimSuffix(url, "/mcp"), url: url}, before
}

// readNotify reads one datagram of the service manager's socket (bounded
// by a minute, a condition, not a timing).
func readNotify(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 4096)
	n, _, err := conn.ReadFromUnix(buf)
	if err != nil {
		t.Fatalf("reading NOTIFY_SOCKET: %v", err)
	}
	return string(buf[:n])
}

// TestServeNotify: with NOTIFY_SOCKET (a path, and an abstract @name),
// serve --http sends READY=1 once it serves (the gateway answers by
// then), and STOPPING=1 when SIGTERM starts the drain; the MCP servers it
// starts do not inherit NOTIFY_SOCKET.
func TestServeNotify(t *testing.T) {
	for _, tc := range []struct{ name, socket string }{
		{"path", filepath.Join(t.TempDir(), "notify.sock")},
		{"abstract", fmt.Sprintf("@dsh-notify-test-%d", time.Now().UnixNano())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: tc.socket, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			p, _ := startNotified(t, ctx, tc.socket)

			ready := readNotify(t, conn)
			if !strings.HasPrefix(ready, "READY=1\n") || !strings.Contains(ready, "STATUS=serving "+p.url) {
				t.Errorf("first notification = %q, want READY=1 and STATUS=serving %s", ready, p.url)
			}
			if code, body := p.get(t, "/healthz", nil); code != http.StatusOK {
				t.Errorf("at READY=1, /healthz = %d %q", code, body)
			}
			if env := fixtureEnv(t, ctx, p); strings.Contains(env, "NOTIFY_SOCKET") {
				t.Errorf("the MCP server inherited NOTIFY_SOCKET:\n%s", env)
			}

			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if got := readNotify(t, conn); !strings.HasPrefix(got, "STOPPING=1\n") {
				t.Errorf("notification at SIGTERM = %q, want STOPPING=1", got)
			}
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("serve after SIGTERM: %v", err)
			}
		})
	}
}

// fixtureEnv calls the fixture's env tool through the gateway.
func fixtureEnv(t *testing.T, ctx context.Context, p *gatewayProcess) string {
	t.Helper()
	p.waitReady(t)
	cs := p.connect(t, ctx)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__env"})
	if err != nil || res.IsError {
		t.Fatalf("env: %v %v", err, res)
	}
	return strings.Join(mcptest.Texts(res), "\n")
}

// TestServeNotifyUnreachable: a NOTIFY_SOCKET nobody listens on, or that
// is neither a path nor an @name, is logged, and serve serves and stops
// as without it.
func TestServeNotifyUnreachable(t *testing.T) {
	for _, tc := range []struct{ socket, log string }{
		{filepath.Join(t.TempDir(), "nobody.sock"), "could not notify the service manager"},
		{"relative.sock", "NOTIFY_SOCKET is neither an absolute path nor an abstract @name; the service manager is not told serve's state"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		p, before := startNotified(t, ctx, tc.socket)
		if !slices.Contains(before, tc.log) {
			waitLog(t, p.logs, tc.log, func(m map[string]any) bool { return m["msg"] == tc.log })
		}
		p.waitReady(t)
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("serve with NOTIFY_SOCKET=%s after SIGTERM: %v", tc.socket, err)
		}
		cancel()
	}
}
