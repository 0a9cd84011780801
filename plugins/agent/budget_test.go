package agent

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/outputs"
)

// TestToolResultCutToTheWindow: a 204 KB tool result on a 32,768-token
// window (a model that refuses a request past it, as real APIs do) is cut
// to what fits: no request is refused, the model reads the cut with the
// attachment that keeps the whole, and mcp_read_output reads on from
// there. A second step's result gets half of what is left.
func TestToolResultCutToTheWindow(t *testing.T) {
	const size = 204 << 10
	big := `{"tool":"mcp__demo__oversize","arguments":{"bytes":208896}}`
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "mcp_call", big)}},
		// A second step reads it all again: what is left is halved.
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c2", "mcp_call", big)}},
		openaitest.Turn{Content: "It is long."},
	)
	srv.ContextLimit(32768)
	e := startWith(t, srv, ", -oversize", "      contextWindow: 32768\n")
	var o output
	res, err := e.agent.Main().Turn(context.Background(), "Read the big file.", o.out())
	if err != nil || res.Answer != "It is long." {
		t.Fatalf("turn: %+v %v; status:\n%s", res, err, o.status.String())
	}
	if n := srv.Refused(); n != 0 {
		t.Fatalf("%d requests passed the window", n)
	}
	msgs := messages(t, srv, 1)
	result := msgs[len(msgs)-1].Text()
	if len(result) >= size/2 || !strings.HasPrefix(result, "xxxx") || !strings.Contains(result, "cut to fit the model's context window (32768 tokens)") {
		t.Fatalf("the model read %d bytes: %.200q … %q", len(result), result, result[max(len(result)-400, 0):])
	}
	second := messages(t, srv, 2)
	if again := second[len(second)-1].Text(); len(again) >= len(result) || !strings.Contains(again, "cut to fit") {
		t.Errorf("the second step's result: %d bytes, want fewer than the first's %d", len(again), len(result))
	}
	m := regexp.MustCompile(`read on with mcp_read_output (\{.*?\})`).FindStringSubmatch(result)
	if m == nil {
		t.Fatalf("the cut names no way to read on: %q", result[max(len(result)-400, 0):])
	}
	var args struct {
		ID     string `json:"id"`
		Offset int    `json:"offset"`
	}
	if err := json.Unmarshal([]byte(m[1]), &args); err != nil {
		t.Fatal(err)
	}
	rc, ref, err := e.agent.store.Open(args.ID)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(rc)
	rc.Close()
	if ref.Bytes != size || string(whole) != strings.Repeat("x", size) {
		t.Errorf("the attachment holds %d bytes, want the whole %d", ref.Bytes, size)
	}
	rest := e.reg.Execute(context.Background(), e.agent.Caller(), outputs.ToolName, []byte(m[1]))
	if rest.Err != nil || len(rest.Content) == 0 || !strings.Contains(rest.Content[0].Text, "xxxx") {
		t.Errorf("mcp_read_output %s: %v %+v", m[1], rest.Err, rest.Content)
	}
}

// TestFitResultsShares: the results of one step share the budget: one
// under its share is kept whole, the larger ones are cut to what it
// leaves, and together they stay within the budget (a note each); with no
// attachments service the note says the rest is not kept.
func TestFitResultsShares(t *testing.T) {
	a := &Agent{cfg: config{ContextWindow: 32768}}
	calls := []toolCall{{Name: "big"}, {Name: "small"}, {Name: "huge"}}
	results := []toolOutcome{{text: strings.Repeat("a", 50000)}, {text: "short"}, {text: strings.Repeat("é", 100000)}}
	const budget = 30000
	a.fitResults(context.Background(), calls, results, budget)
	total := 0
	for _, r := range results {
		total += len(r.text)
	}
	if results[1].text != "short" || total > budget+2*400 {
		t.Errorf("kept %q and %d bytes in all, want the short one whole and at most %d", results[1].text, total, budget+800)
	}
	for _, i := range []int{0, 2} {
		if !strings.Contains(results[i].text, "cut to fit") || !strings.Contains(results[i].text, "the rest is not kept (no attachments service)") || !utf8.ValidString(results[i].text) || len(results[i].text) < budget/3-400 {
			t.Errorf("result %d: %d bytes, valid %v: %q", i, len(results[i].text), utf8.ValidString(results[i].text), results[i].text[max(len(results[i].text)-300, 0):])
		}
	}
}
