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

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// movedSeeds are each client's user file with one server of its own,
// "fixture" (FIXTURE: its command), and how to read back the command line
// of the entry "dsh" connect writes, with the decoders the formats have.
var movedSeeds = []struct {
	client, rel, text string
	entry             func(t *testing.T, data []byte) []string
}{
	{"claude-code", ".claude.json", `{"numStartups": 3, "mcpServers": {"fixture": {"type": "stdio", "command": "FIXTURE", "args": []}}, "userID": "abc"}`, jsonEntry("mcpServers")},
	{"codex", ".codex/config.toml", "model = \"o3\"\n\n[mcp_servers.fixture]\ncommand = \"FIXTURE\"\n", func(t *testing.T, data []byte) []string {
		var cfg struct {
			MCPServers map[string]struct {
				Command string   `toml:"command"`
				Args    []string `toml:"args"`
			} `toml:"mcp_servers"`
		}
		if _, err := toml.Decode(string(data), &cfg); err != nil {
			t.Fatal(err)
		}
		if len(cfg.MCPServers) != 1 {
			t.Fatalf("servers left:\n%s", data)
		}
		return append([]string{cfg.MCPServers["dsh"].Command}, cfg.MCPServers["dsh"].Args...)
	}},
	{"gemini", ".gemini/settings.json", `{"theme": "GitHub", "mcpServers": {"fixture": {"command": "FIXTURE"}}}`, jsonEntry("mcpServers")},
	{"opencode", ".config/opencode/opencode.json", `{"$schema": "https://opencode.ai/config.json", "mcp": {"fixture": {"type": "local", "command": ["FIXTURE"]}}}`, func(t *testing.T, data []byte) []string {
		var cfg struct {
			MCP map[string]struct {
				Command []string `json:"command"`
			} `json:"mcp"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		if len(cfg.MCP) != 1 {
			t.Fatalf("servers left:\n%s", data)
		}
		return cfg.MCP["dsh"].Command
	}},
	{"cursor", ".cursor/mcp.json", `{"mcpServers": {"fixture": {"command": "FIXTURE", "args": []}}}`, jsonEntry("mcpServers")},
	{"vscode", ".config/Code/User/mcp.json", `{"inputs": [], "servers": {"fixture": {"type": "stdio", "command": "FIXTURE"}}}`, jsonEntry("servers")},
}

// jsonEntry reads the command line of the one server left under list.
func jsonEntry(list string) func(t *testing.T, data []byte) []string {
	return func(t *testing.T, data []byte) []string {
		var cfg map[string]json.RawMessage
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		var servers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if err := json.Unmarshal(cfg[list], &servers); err != nil {
			t.Fatal(err)
		}
		if len(servers) != 1 {
			t.Fatalf("servers left:\n%s", data)
		}
		return append([]string{servers["dsh"].Command}, servers["dsh"].Args...)
	}
}

// TestConnectMoveReachesTheMovedServer: for each client, connect --move
// takes the client's own server into the composition and leaves the
// client's file with dsh-host alone; the command line written there, run
// as it is from another directory, serves the moved server's tool to an
// MCP client; --undo restores both files byte for byte.
func TestConnectMoveReachesTheMovedServer(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	for _, seed := range movedSeeds {
		t.Run(seed.client, func(t *testing.T) {
			home := t.TempDir()
			orig := []byte(strings.ReplaceAll(seed.text, "FIXTURE", fixture) + "\n")
			file := filepath.Join(home, seed.rel)
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			comp := writeComposition(t, "# mine\nplugins: []\n")
			dshHome := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			run := func(args ...string) (int, string, string) {
				cmd := command(t, ctx, args...)
				cmd.Env = append(cmd.Env, "HOME="+home, "DSH_HOME="+dshHome, "XDG_CONFIG_HOME=")
				return runToEnd(t, cmd)
			}

			// Without a terminal to ask on, and without --yes, nothing is
			// written.
			if code, out, errOut := run("connect", seed.client, "--move", "-c", comp); code != exitFail || !strings.Contains(errOut, "--yes") || !strings.Contains(out, "+++ "+file) {
				t.Fatalf("no --yes: exit %d\n%s\n%s", code, out, errOut)
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, orig) {
				t.Fatal("written without --yes")
			}
			code, out, errOut := run("connect", seed.client, "--move", "--yes", "-c", comp)
			if code != exitOK || !strings.Contains(out, "moved into "+comp+": fixture") {
				t.Fatalf("connect: exit %d\n%s\n%s", code, out, errOut)
			}
			data, _ := os.ReadFile(file)
			argv := seed.entry(t, data)
			if len(argv) == 0 || argv[0] != binary {
				t.Fatalf("command line %q, want the installed %s:\n%s", argv, binary, data)
			}

			// The client's view: start exactly what the file says.
			client := exec.CommandContext(ctx, argv[0], argv[1:]...)
			client.Env = append(os.Environ(), "HOME="+home, "DSH_HOME="+dshHome)
			client.Dir = t.TempDir() // a client's own directory, not the composition's
			cs, err := mcp.NewClient(&mcp.Implementation{Name: seed.client, Version: "0"}, nil).
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

			if code, out, _ := run("connect", "--list"); code != exitOK || !strings.Contains(out, "~/"+seed.rel+": dsh → "+comp) {
				t.Errorf("--list: exit %d\n%s", code, out)
			}
			if code, out, errOut := run("connect", "--undo", seed.client, "--yes"); code != exitOK {
				t.Fatalf("undo: exit %d\n%s\n%s", code, out, errOut)
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, orig) {
				t.Fatalf("undo did not restore %s:\n%s", file, got)
			}
			if got, _ := os.ReadFile(comp); string(got) != "# mine\nplugins: []\n" {
				t.Fatalf("undo did not restore the composition:\n%s", got)
			}
		})
	}
}

// TestConnectAsksOnATerminal: on a terminal the diff is asked for, and
// only a yes writes it.
func TestConnectAsksOnATerminal(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DSH_HOME", t.TempDir())
	file := filepath.Join(home, ".cursor", "mcp.json")
	for _, answer := range []string{"\n", "n\n", "y\n"} {
		var out, errOut bytes.Buffer
		std := Stdio{In: strings.NewReader(answer), Out: &out, Err: &errOut, Terminal: func(any) bool { return true }}
		code := cmdConnect(context.Background(), []string{"cursor", "--http", "http://127.0.0.1:8931/mcp"}, std)
		_, err := os.Stat(file)
		if answer != "y\n" {
			if code != exitFail || err == nil || !strings.Contains(errOut.String(), "Write this? [y/N]") {
				t.Fatalf("answer %q: exit %d, file %v\n%s", answer, code, err, errOut.String())
			}
			continue
		}
		if code != exitOK || err != nil || !strings.Contains(out.String(), `+      "url": "http://127.0.0.1:8931/mcp"`) {
			t.Fatalf("yes: exit %d, file %v\n%s\n%s", code, err, out.String(), errOut.String())
		}
	}
}
