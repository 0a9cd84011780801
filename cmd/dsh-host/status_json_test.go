package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestStatusJSONTypedFields: `status --json` carries what a front end
// reads instead of the detail text, under the names docs/commands.md
// gives: a gateway's endpoint, a lazy server with the claim its tools are
// traced by, a failed one's error and claim.
func TestStatusJSONTypedFields(t *testing.T) {
	fx := mcptest.FixtureBinary(t)
	file := writeComposition(t, fmt.Sprintf(`plugins:
  - id: later
    name: mcp-client
    config: {serverName: later, transport: stdio, command: %[1]q, startup: lazy}
  - id: broken
    name: mcp-client
    config: {serverName: broken, transport: stdio, command: %[1]q, args: [-crash-on-start], failOnStartupError: true, reconnect: {enabled: false}}
  - {id: gw, name: gateway, config: {http: "127.0.0.1:0"}}
`, fx))
	code, stdout, stderr := dshHost(t, "status", "--json", "-c", file)
	var doc struct {
		Instances []struct {
			ID, State, Error, Endpoint, Sandbox, LastError, Transport string
			Lazy, Dormant                                             bool
			Claims                                                    []struct{ Kind, Value, ToolPrefix string }
		} `json:"instances"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	seen := map[string]bool{}
	for _, in := range doc.Instances {
		seen[in.ID] = true
		switch in.ID {
		case "later":
			if !in.Lazy || in.Transport != "stdio" || len(in.Claims) != 1 || in.Claims[0].Kind != "serverName" || in.Claims[0].Value != "later" || in.Claims[0].ToolPrefix != "mcp__later__" {
				t.Errorf("later: %+v; want lazy over stdio, claiming serverName later (mcp__later__)", in)
			}
		case "broken":
			if in.State != "failed" || in.Error == "" || len(in.Claims) != 1 || in.Claims[0].ToolPrefix != "mcp__broken__" {
				t.Errorf("broken: %+v; want failed with its error and its claim", in)
			}
		case "gw":
			if !strings.HasPrefix(in.Endpoint, "http://127.0.0.1:") || !strings.HasSuffix(in.Endpoint, "/mcp") || in.Transport != "" {
				t.Errorf("gw: %+v; want its endpoint and no transport (in-process)", in)
			}
		}
	}
	if !seen["later"] || !seen["broken"] || !seen["gw"] {
		t.Errorf("instances %v; want later, broken and gw\n%s", seen, stdout)
	}
	// The names are the documented ones, lower camel case.
	for _, key := range []string{`"endpoint"`, `"lazy"`, `"transport"`, `"claims"`, `"toolPrefix"`} {
		if !strings.Contains(stdout, key) {
			t.Errorf("status --json lacks %s:\n%s", key, stdout)
		}
	}
}
