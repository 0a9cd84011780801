package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 client whose answer to an input request does not fit the
// form gets an error and never retries: the call it abandoned ends, and
// the server's later questions, in later calls, still reach the client.
func TestE2EBridgeAbandonedQuestion(t *testing.T) {
	bin := dshHostBinary(t)
	for _, upstream := range []string{"latest", "2025-11-25"} {
		t.Run("server "+upstream, func(t *testing.T) {
			e := newE2E(t)
			args := bridgeFixtureArgs
			if upstream != "latest" {
				args = append(append([]string{}, args...), "-protocol", upstream)
			}
			e.writeBridge(t, args...)
			var bad bool
			c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if bad {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": 5, "count": "many"}}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "color": "r", "count": 2}}, nil
				},
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "model says hi"}}, nil
				},
			}, "")
			ctx := ctxT(t)
			bad = true
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__ask", Arguments: map[string]any{}})
			if err == nil && !res.IsError {
				t.Fatalf("an answer that does not fit the form: %s, want an error", resultText(res))
			}
			t.Logf("abandoned: %v %v", err, res)
			bad = false
			for range 2 {
				res, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__sample", Arguments: map[string]any{"prompt": "hello"}})
				if err != nil || res.IsError || !strings.Contains(resultText(res), "model says hi") {
					t.Errorf("sampling after an abandoned question: %v %s", err, resultText(res))
				}
				res, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__ask", Arguments: map[string]any{}})
				if err != nil || res.IsError || !strings.Contains(resultText(res), "Ada") {
					t.Errorf("elicitation after an abandoned question: %v %s", err, resultText(res))
				}
			}
		})
	}
}

// A server's roots/list during a call made through the gateway gets the
// calling client's roots, whichever revision the client speaks; a client
// without roots leaves the server the entry's (none here).
func TestE2EBridgeRootsOfTheCaller(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	e.writeBridge(t, "-roots", "-protocol", "2025-11-25")
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol "+cmpOr(version, "latest"), func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "roots-e2e", Version: "0"}, nil)
			//lint:ignore SA1019 roots stay functional through their deprecation window.
			client.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
			ctx := ctxT(t)
			cs, err := client.Connect(ctx, e.transport(t, bin, "stdio"), &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__roots", Arguments: map[string]any{}})
			if err != nil {
				// Reported, not dereferenced: a nil result here once
				// panicked the test and hid the error.
				t.Fatalf("calling the roots tool: %v", err)
			}
			if res.IsError || resultText(res) != "file:///work/project" {
				t.Errorf("roots seen by the server: %q, want the client's", resultText(res))
			}
		})
	}
}
