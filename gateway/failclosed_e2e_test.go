package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestE2EFailClosedThroughTheGateway: arguments meant to slip past a deny
// rule over a path (a number beyond a double's range, a list, a key twice)
// are refused through the gateway, directly and through mcp_call, with
// the reason in the result; the server, which checks nothing, never
// receives them.
func TestE2EFailClosedThroughTheGateway(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	writeFile(t, e.composition, e.fixtureEntry("-op")+`  - id: fold
    name: mcp-fold
    config: {keep: ["mcp__fx__op"]}
  - id: policy
    name: policy
    config:
      rules:
        - tools: [mcp__fx__op]
          when: 'args.path.startsWith("/etc")'
          action: deny
`)
	c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{}, "")
	call := func(name string, args json.RawMessage) (string, bool) {
		t.Helper()
		res, err := c.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return resultText(res), res.IsError
	}
	for _, c := range []struct{ args, why string }{
		{`{"path":"/etc/passwd","pad":1e400}`, "denied by policy rule 1"},
		{`{"path":["/etc/passwd"]}`, "do not match its input schema at arguments.path"},
		{`{"path":"/tmp/x","path":"/etc/passwd"}`, `has the key "path" twice`},
	} {
		if text, isErr := call("mcp__fx__op", json.RawMessage(c.args)); !isErr || !strings.Contains(text, c.why) {
			t.Errorf("%s: %q (isError %v), want a refusal saying %q", c.args, text, isErr, c.why)
		}
		folded := json.RawMessage(`{"tool":"mcp__fx__op","arguments":` + c.args + `}`)
		if text, isErr := call("mcp_call", folded); !isErr || !strings.Contains(text, c.why) {
			t.Errorf("mcp_call %s: %q (isError %v), want a refusal saying %q", c.args, text, isErr, c.why)
		}
	}
	if text, isErr := call("mcp__fx__op", json.RawMessage(`{"path":"/tmp/x"}`)); isErr || !strings.HasPrefix(text, "1 ") {
		t.Fatalf("allowed: %q (isError %v), want the server's first call: a refused one reached it", text, isErr)
	}
}
