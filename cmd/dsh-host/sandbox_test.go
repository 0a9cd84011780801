package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestSandboxCheck: `dsh-host sandbox check` prints each stdio server's
// rules and what is not enforced, and its probes, run in the server's
// sandbox, are refused; with mode off the same probes get through and the
// check says so; a server named that the composition lacks is an error
// listing those it has; an HTTP server is not checked.
func TestSandboxCheck(t *testing.T) {
	if abi, why := sandbox.Support(); abi == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock is required under CI=true: %s", why)
		}
		t.Skip(why)
	}
	fixture := mcptest.FixtureBinary(t)
	file := writeComposition(t, fmt.Sprintf(`plugins:
  - {id: boxed, name: mcp-client, config: {serverName: boxed, transport: stdio, command: %[1]q, sandbox: {connect: [443]}}}
  - {id: open, name: mcp-client, config: {serverName: open, transport: stdio, command: %[1]q, sandbox: {mode: "off"}}}
  - {id: web, name: mcp-client, config: {serverName: web, transport: streamable-http, url: "http://127.0.0.1:1/mcp"}}
`, fixture))
	code, out, errOut := dshHost(t, "sandbox", "check", "-c", file, "boxed")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"boxed (entry \"boxed\"):", "sandboxed (landlock v", "connect: 443; bind: none",
		"probe read (", "probe write (", "probe connect-tcp (",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, probe := range []string{"read", "write", "connect-tcp"} {
		refused := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "  probe "+probe+" (") && strings.Contains(line, "): refused, as the rules say") {
				refused = true
			}
		}
		if !refused {
			t.Errorf("probe %s not refused:\n%s", probe, out)
		}
	}
	if strings.Contains(out, "NOT as the rules say") {
		t.Errorf("a probe got other than the rules say:\n%s", out)
	}

	code, out, _ = dshHost(t, "sandbox", "check", "-c", file)
	if code != exitOK || !strings.Contains(out, "open (entry \"open\"):") || strings.Count(out, "allowed, as the rules say") < 3 || strings.Contains(out, "web (") {
		t.Errorf("all: exit %d, want the open server's probes allowed and no HTTP server:\n%s", code, out)
	}

	code, _, errOut = dshHost(t, "sandbox", "check", "-c", file, "nope")
	if code != exitFail || !strings.Contains(errOut, `no enabled mcp-client entry with serverName "nope"`) || !strings.Contains(errOut, "boxed") {
		t.Errorf("unknown server: exit %d, %q", code, errOut)
	}
	if code, _, errOut = dshHost(t, "sandbox", "check", "-c", file, "web"); code != exitFail || !strings.Contains(errOut, "not a stdio server") {
		t.Errorf("HTTP server: exit %d, %q", code, errOut)
	}
}
