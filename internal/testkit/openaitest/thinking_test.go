package openaitest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// TestThinkingModels: a thinking model's request with a tool-calling
// turn whose assistant messages lack reasoning_content (missing or empty)
// is answered 400 with DeepSeek's message, the scripted turn kept; with it,
// with thinking disabled, or for another model, the turn is played (with
// thinking disabled, without its reasoning).
func TestThinkingModels(t *testing.T) {
	srv := openaitest.New(t)
	srv.ThinkingModels("think")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	post := func(body string) (int, string) {
		t.Helper()
		res, err := (&http.Client{Transport: tr}).Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	const call = `{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]%s},{"role":"tool","tool_call_id":"c1","content":"1"}`
	const answer = `{"role":"assistant","content":"done"%s}`
	body := func(model, call, answer, extra string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"q"},` + call + `,` + answer + `,{"role":"user","content":"again"}]` + extra + `}`
	}
	r := func(s string) string { return strings.Replace(s, "%s", `,"reasoning_content":"why"`, 1) }
	none := func(s string) string { return strings.Replace(s, "%s", "", 1) }
	empty := func(s string) string { return strings.Replace(s, "%s", `,"reasoning_content":""`, 1) }
	for _, c := range []struct {
		name, body string
		status     int
	}{
		{"call without reasoning", body("think", none(call), r(answer), ""), 400},
		{"empty reasoning", body("think", empty(call), r(answer), ""), 400},
		{"answer of a tool turn without reasoning", body("think", r(call), none(answer), ""), 400},
		{"thinking enabled", body("think", none(call), r(answer), `,"thinking":{"type":"enabled"}`), 400},
		{"with reasoning", body("think", r(call), r(answer), ""), 200},
		{"thinking disabled", body("think", none(call), none(answer), `,"thinking":{"type":"disabled"}`), 200},
		{"another model", body("plain", none(call), none(answer), ""), 200},
		{"no tool call", `{"model":"think","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"b"}]}`, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.Push(openaitest.Turn{Reasoning: "THOUGHT", Content: "ok"})
			status, b := post(c.body)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, b)
			}
			switch {
			case c.status == 400:
				if !strings.Contains(b, "The `reasoning_content` in the thinking mode must be passed back to the API.") || srv.Left() != 1 {
					t.Errorf("body %s, %d turns left (want the turn kept)", b, srv.Left())
				}
				// Another model's request plays the kept turn.
				post(`{"model":"plain","messages":[]}`)
			case strings.Contains(c.body, `"disabled"`) == strings.Contains(b, `"reasoning_content"`):
				t.Errorf("thinking disabled: %v, reasoning streamed: %s", strings.Contains(c.body, `"disabled"`), b)
			}
		})
	}
}
