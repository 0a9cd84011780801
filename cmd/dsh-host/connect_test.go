package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestConnectMoveReachesTheMovedServer: connect --move takes Claude Code's
// own server into the composition and leaves ~/.claude.json with dsh-host
// alone; the command line written there, run as it is, serves the moved
// server's tool to an MCP client; --undo restores the file byte for byte.
func TestConnectMoveReachesTheMovedServer(t *testing.T) {
	home := t.TempDir()
	fixture := mcptest.FixtureBinary(t)
	orig := []byte(`{
  "numStartups": 3,
  "mcpServers": {
    "fixture": {
      "type": "stdio",
      "command": "` + fixture + `",
      "args": []
    }
  },
  "userID": "abc"
}
`)
	claude := filepath.Join(home, ".claude.json")
	if err := os.WriteFile(claude, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	comp := writeComposition(t, "# mine\nplugins: []\n")
	dshHome := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(args ...string) (int, string, string) {
		cmd := command(t, ctx, args...)
		cmd.Env = append(cmd.Env, "HOME="+home, "DSH_HOME="+dshHome)
		return runToEnd(t, cmd)
	}

	// Without a terminal to ask on, and without --yes, nothing is written.
	if code, out, errOut := run("connect", "claude-code", "--move", "-c", comp); code != exitFail || !strings.Contains(errOut, "--yes") || !strings.Contains(out, "+    \"dsh\": {") {
		t.Fatalf("no --yes: exit %d\n%s\n%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(claude); !bytes.Equal(got, orig) {
		t.Fatal("written without --yes")
	}
	code, out, errOut := run("connect", "claude-code", "--move", "--yes", "-c", comp)
	if code != exitOK || !strings.Contains(out, "moved into "+comp+": fixture") {
		t.Fatalf("connect: exit %d\n%s\n%s", code, out, errOut)
	}

	var cfg struct {
		NumStartups int `json:"numStartups"`
		MCPServers  map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	data, _ := os.ReadFile(claude)
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.MCPServers) != 1 || cfg.NumStartups != 3 {
		t.Fatalf("~/.claude.json after --move:\n%s", data)
	}
	entry, ok := cfg.MCPServers["dsh"]
	if !ok || entry.Command != binary || entry.Type != "stdio" {
		t.Fatalf("entry %+v, want the installed %s:\n%s", entry, binary, data)
	}

	// The client's view: start exactly what the file says.
	client := exec.CommandContext(ctx, entry.Command, entry.Args...)
	client.Env = append(os.Environ(), "HOME="+home, "DSH_HOME="+dshHome)
	client.Dir = t.TempDir() // a client's own directory, not the composition's
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(tl *mcp.Tool) bool { return strings.HasSuffix(tl.Name, "fixture__greet") })
	if i < 0 {
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		t.Fatalf("no fixture greet tool among %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[i].Name, Arguments: map[string]any{"name": "connect"}})
	if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "Hello, connect!" {
		t.Fatalf("call %s: %+v, %v", tools.Tools[i].Name, res, err)
	}
	cs.Close()

	if code, out, _ := run("connect", "--list"); code != exitOK || !strings.Contains(out, "claude-code  ~/.claude.json: dsh → "+comp) {
		t.Errorf("--list: exit %d\n%s", code, out)
	}
	if code, out, errOut := run("connect", "--undo", "claude-code", "--yes"); code != exitOK {
		t.Fatalf("undo: exit %d\n%s\n%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(claude); !bytes.Equal(got, orig) {
		t.Fatalf("undo did not restore ~/.claude.json:\n%s", got)
	}
	if got, _ := os.ReadFile(comp); string(got) != "# mine\nplugins: []\n" {
		t.Fatalf("undo did not restore the composition:\n%s", got)
	}
}
