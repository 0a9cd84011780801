package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestE2EPolicyAsksTheClient: where the policy asks, the gateway asks its
// client through elicitation when the client declares it (its answer
// decides), and denies, saying why, when it does not; a denied call never
// reaches the server.
func TestE2EPolicyAsksTheClient(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	writeFile(t, e.composition, e.fixtureEntry("-counter")+`  - id: policy
    name: policy
    config:
      rules:
        - tools: [mcp__fx__count]
          action: ask
`)
	answers := make(chan string, 4)
	var asked []*mcp.ElicitParams
	asking := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params)
			if a := <-answers; a != "" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": a}}, nil
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}, "")
	call := func(c *bridgeClient) (string, bool) {
		t.Helper()
		res, err := c.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "mcp__fx__count", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return resultText(res), res.IsError
	}
	answers <- ""
	if text, isErr := call(asking); !isErr || !strings.Contains(text, "not approved") {
		t.Errorf("declined: %q (isError %v), want a denial", text, isErr)
	}
	answers <- "once"
	if text, isErr := call(asking); isErr || text != "1" {
		t.Errorf("approved once: %q (isError %v), want the server's first call", text, isErr)
	}
	if len(asked) != 2 || !strings.HasPrefix(asked[0].Message, "Allow mcp__fx__count {}?") {
		t.Fatalf("the client was asked %d times: %+v", len(asked), asked)
	}
	// A gateway's client approves its call only: a session or always is
	// not offered.
	if schema := mustJSON(t, asked[0].RequestedSchema); strings.Contains(schema, "session") || !strings.Contains(schema, `"once"`) {
		t.Errorf("the question offers %s, want once alone", schema)
	}

	mute := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{}, "")
	if text, isErr := call(mute); !isErr || !strings.Contains(text, "did not declare the elicitation capability") {
		t.Errorf("a client without elicitation: %q (isError %v), want a denial saying why", text, isErr)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
