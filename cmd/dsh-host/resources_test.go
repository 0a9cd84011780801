package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestCLIResources runs resources, read and prompt commands in-process on
// the fixture server with resources and prompts.
func TestCLIResources(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	marker := fmt.Sprintf("dsh-res-%d-%d", os.Getpid(), time.Now().UnixNano())
	file := writeComposition(t, fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-name, %q, -resources, "3", -prompts]
`, mcptest.FixtureBinary(t), marker))
	defer func() {
		if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
			t.Errorf("server processes left behind: %v", pids)
		}
	}()
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return runIn(t, "", append(args, "-c", file, "--log-level", "error")...)
	}

	code, stdout, stderr := run("resources")
	for _, want := range []string{"URI", "fixture://doc/003    fx      text/plain", "fixture://data.bin", "TEMPLATE", "fixture://doc/{n}"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("resources lacks %q:\n%s", want, stdout)
		}
	}
	if code != exitOK {
		t.Errorf("resources: exit %d, stderr %s", code, stderr)
	}

	code, stdout, _ = run("resources", "--json", "--server", "fx", "image")
	var listed struct {
		Resources []struct{ Server, URI, MIMEType string } `json:"resources"`
	}
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil || code != exitOK {
		t.Fatalf("resources --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if len(listed.Resources) != 1 || listed.Resources[0].URI != "fixture://image.png" || listed.Resources[0].Server != "fx" {
		t.Errorf("resources --json --server fx image = %+v", listed.Resources)
	}
	if code, _, stderr := run("resources", "--server", "nope"); code != exitFail || !strings.Contains(stderr, `unknown server "nope" (servers offering resources: fx)`) {
		t.Errorf("resources --server nope: exit %d, stderr %q", code, stderr)
	}

	for args, want := range map[string]string{
		"fixture://doc/002":      "Resource fixture://doc/002 (text/plain):\nthe text of fixture://doc/002\n",
		"fixture://doc/{n} n=17": "Resource fixture://doc/17 (text/plain):\nthe text of fixture://doc/17\n",
	} {
		code, stdout, stderr := run(append([]string{"read"}, strings.Fields(args)...)...)
		if code != exitOK || stdout != want {
			t.Errorf("read %s: exit %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, want)
		}
	}
	code, stdout, _ = run("read", "fixture://data.bin")
	if code != exitOK || !regexp.MustCompile(`^\[binary resource fixture://data.bin: application/octet-stream, 256 bytes, stored as attachment sha256:[0-9a-f]{64}\]\n$`).MatchString(stdout) {
		t.Errorf("read of a binary: exit %d, %q", code, stdout)
	}
	code, stdout, _ = run("read", "fixture://image.png")
	if code != exitOK || !regexp.MustCompile(`\[image sha256:[0-9a-f]{64} image/png 4x4, \d+ bytes\]`).MatchString(stdout) {
		t.Errorf("read of an image: exit %d, %q", code, stdout)
	}
	code, stdout, _ = run("read", "fixture://doc/001", "--json")
	if code != exitOK || !strings.Contains(stdout, `"server": "fx"`) || !strings.Contains(stdout, `"text": "the text of fixture://doc/001"`) {
		t.Errorf("read --json: exit %d, %s", code, stdout)
	}
	if code, _, stderr := run("read", "fixture://doc/x"); code != exitFail || !strings.Contains(stderr, "dsh-host read: mcp-client(fx): read fixture://doc/x: the server answered with an error") {
		t.Errorf("read of a missing resource: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := run("read", "fixture://doc/001", "n=1"); code != exitUsage || !strings.Contains(stderr, "one URI only") {
		t.Errorf("read with arguments but no template: exit %d, stderr %q", code, stderr)
	}

	// Prompts are commands; so are /resources, /read and /complete.
	for line, want := range map[string]string{
		"/mcp__fx__echo hi times=2":           "echo\n\n[user]\nhihi\n",
		"/read fixture://doc/003":             "Resource fixture://doc/003 (text/plain):\nthe text of fixture://doc/003\n",
		"/complete /mcp__fx__e":               "/mcp__fx__echo\n",
		"/complete /read fixture://doc/{n} n": "n=\n",
	} {
		code, stdout, stderr := run("command", line)
		if code != exitOK || stdout != want {
			t.Errorf("command %q: exit %d, stdout %q, stderr %q; want %q", line, code, stdout, stderr, want)
		}
	}
	if code, _, stderr := run("command", "/mcp__fx__echo"); code != exitFail || !strings.Contains(stderr, "missing required argument(s): text (what to repeat) — usage: /mcp__fx__echo text=… [times=…]") {
		t.Errorf("a prompt without its required argument: exit %d, stderr %q", code, stderr)
	}
}

// builtins is the number of built-in plugins linked in, each of which runs
// an instance whether or not the composition lists it.
func builtins() int {
	n := 0
	for _, p := range host.Plugins() {
		if p.Builtin {
			n++
		}
	}
	return n
}
