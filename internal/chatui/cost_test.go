package chatui

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// TestStreamJSONPermissionDenial: a call the policy denies is listed in
// the result's permission_denials, as Claude Code lists them; a model
// without a price has a total_cost_usd of null, not 0. (Unfolded: a
// folded call's refusal reaches the agent as mcp_call's failed result,
// not as a refusal.)
func TestStreamJSONPermissionDenial(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "mcp__demo__add", Arguments: `{"a":1,"b":2}`}}},
		openaitest.Turn{Content: "Not allowed.", Usage: &openaitest.Usage{PromptTokens: 50, CompletionTokens: 4}},
	)
	comp := chatComposition(t, srv)
	comp = strings.Replace(comp, "  - id: fold\n    name: mcp-fold\n", "", 1)
	comp = strings.Replace(comp, "        deepseek-flash: {input: 300, cachedInput: 30, output: 1200}\n", "        other-model: {input: 1, output: 1}\n", 1)
	comp = strings.Replace(comp, "      rules: [{callers: [chat], action: allow}]\n", "      rules:\n        - tools: [\"mcp__demo__add\"]\n          action: deny\n", 1)
	var stdout, stderr mcptest.SyncBuffer
	ch, h := startChat(t, comp, console.Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	if _, err := ch.Once(context.Background(), h, "What is 1+2?", FormatStreamJSON, false, make(chan os.Signal)); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	var last string
	for sc := bufio.NewScanner(strings.NewReader(stdout.String())); sc.Scan(); {
		last = sc.Text()
	}
	var r struct {
		TotalCostUSD      *float64 `json:"total_cost_usd"`
		PermissionDenials []struct {
			ToolName  string         `json:"tool_name"`
			ToolUseID string         `json:"tool_use_id"`
			ToolInput map[string]any `json:"tool_input"`
		} `json:"permission_denials"`
	}
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		t.Fatalf("%v: %s", err, last)
	}
	if r.TotalCostUSD != nil || !strings.Contains(last, `"total_cost_usd":null`) {
		t.Errorf("unpriced model: %s", last)
	}
	if len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolUseID != "call_1" || r.PermissionDenials[0].ToolName != "mcp__demo__add" ||
		r.PermissionDenials[0].ToolInput["a"] != 1.0 {
		t.Errorf("permission_denials: %s", last)
	}
}
