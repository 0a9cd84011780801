package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/tools"
)

type noopIn struct {
	N int `json:"n" jsonschema:"any number"`
}

// BenchmarkStep measures the host's own time per agent step: one turn is
// two steps (a model answer asking for a trivial tool, then a final
// answer without tools), against the scripted server served in-process
// (openaitest.Server.Transport: no socket). The model sub-benchmark is the
// scripted server's own work for the same two answers, to subtract:
// host time per step = (turn - model) / 2.
func BenchmarkStep(b *testing.B) {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "bench", nil)
	defer s.Dispose(time.Second)
	if _, err := reg.Register(s, tools.Func("noop", "Return n.", func(_ context.Context, in noopIn) (any, error) { return in.N, nil })); err != nil {
		b.Fatal(err)
	}
	srv := openaitest.New(b)
	turns := []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "noop", Arguments: `{"n":1}`}}, Usage: &openaitest.Usage{PromptTokens: 10, CompletionTokens: 1}},
		{Content: "ok", Usage: &openaitest.Usage{PromptTokens: 12, CompletionTokens: 1}},
	}
	cfg := defaults()
	cfg.BaseURL = srv.URL
	a := newAgent(context.Background(), cfg, "k", reg, nil, &http.Client{Transport: srv.Transport()})

	b.Run("turn", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			srv.Push(turns...)
			if _, err := a.NewConversation().Turn(context.Background(), "hi", Output{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same two answers, asked for directly with the request bodies a
	// turn sends: the model's share of the turn.
	bodies := make([][]byte, 2)
	srv.Push(turns...)
	c := a.NewConversation()
	if _, err := c.Turn(context.Background(), "hi", Output{}); err != nil {
		b.Fatal(err)
	}
	for i, r := range srv.Requests()[len(srv.Requests())-2:] {
		bodies[i] = r.Body
	}
	rt := srv.Transport()
	b.Run("model", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			srv.Push(turns...)
			for _, body := range bodies {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/chat/completions", strings.NewReader(string(body)))
				res, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				res.Body.Close()
			}
		}
	})
}

// BenchmarkRequestSize reports the bytes of one request (a system-less
// conversation of one user message) with 2 servers x 400 tools, folded by
// an mcp-fold entry and unfolded, and the time to assemble and encode it.
// The 800 tools are tools.Func tools named as MCP tools are
// (mcp__s1__tool_001), each with a two-property schema and a one-line
// description, registered on a real host.
func BenchmarkRequestSize(b *testing.B) {
	for _, folded := range []bool{false, true} {
		name := map[bool]string{false: "unfolded", true: "folded"}[folded]
		b.Run(name, func(b *testing.B) {
			b.Setenv("DSH_HOME", b.TempDir())
			h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
			defer h.Shutdown(context.Background())
			comp := "plugins: []\n"
			if folded {
				comp = "plugins:\n  - {id: fold, name: mcp-fold}\n"
			}
			c, err := host.ParseComposition("composition.yml", []byte(comp), nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := h.Update(context.Background(), c); err != nil {
				b.Fatal(err)
			}
			reg, _ := host.Lookup(h, tools.Key)
			s := host.NewScope(context.Background(), "servers", nil)
			defer s.Dispose(time.Second)
			type args struct {
				Path  string `json:"path" jsonschema:"the file or directory to act on"`
				Limit int    `json:"limit,omitempty" jsonschema:"how many entries at most"`
			}
			for srvN := 1; srvN <= 2; srvN++ {
				for i := 1; i <= 400; i++ {
					d := tools.Func(fmt.Sprintf("mcp__s%d__tool_%03d", srvN, i),
						fmt.Sprintf("Tool %d of server %d: does one thing to the path it is given and says what it did.", i, srvN),
						func(context.Context, args) (any, error) { return "", nil })
					if _, err := reg.Register(s, d); err != nil {
						b.Fatal(err)
					}
				}
			}
			a := newAgent(context.Background(), defaults(), "", reg, nil, http.DefaultClient)
			msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
			var size, toolsSize int
			b.ReportAllocs()
			for b.Loop() {
				asm, err := reg.Assemble(context.Background(), a.Caller())
				if err != nil {
					b.Fatal(err)
				}
				tj, err := asm.ToolsJSON()
				if err != nil {
					b.Fatal(err)
				}
				body, err := a.requestBody(msgs, tj, len(asm.Tools) > 0, nil)
				if err != nil {
					b.Fatal(err)
				}
				size, toolsSize = len(body), len(tj)
			}
			b.ReportMetric(float64(size), "request-bytes")
			b.ReportMetric(float64(toolsSize), "tools-bytes")
		})
	}
}

// cannedModel answers every request without reading it into memory: the
// recorded stream of a tool call when the conversation's last message is
// the user's, else the recorded stream of an answer. Unlike the scripted
// server it keeps no request, so a long benchmark's memory is the agent's.
type cannedModel struct{ call, answer []byte }

func (m cannedModel) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	stream := m.call
	if bytes.LastIndex(body, []byte(`"role":"tool"`)) > bytes.LastIndex(body, []byte(`"role":"user"`)) {
		stream = m.answer
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(stream)), Request: r,
	}, nil
}

// recordStream returns the scripted server's stream for turn.
func recordStream(b *testing.B, turn openaitest.Turn) []byte {
	srv := openaitest.New(b, turn)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/chat/completions", strings.NewReader(`{}`))
	res, err := srv.Transport().RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkLongSession measures the agent's own time per step and its
// memory in a 200-turn conversation: each turn a question, a tool call
// whose result is 2 KB of text, and an answer (4 messages, about 2.4 KB).
// The model is canned (no network, no parsing of the request), so the time
// is the host's: assembling, encoding the ~0.5 MB request, streaming the
// answer, running the tool, the context estimate. It reports the heap the
// 200-turn conversation holds, and the time per step at turn 200.
func BenchmarkLongSession(b *testing.B) {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "bench", nil)
	defer s.Dispose(time.Second)
	result := strings.Repeat("a line of a tool's result\n", 80)
	var calls atomic.Int64
	// Each result is a string of its own, as a server's would be.
	if _, err := reg.Register(s, tools.Func("noop", "Return a 2 KB text.", func(_ context.Context, in noopIn) (any, error) {
		return fmt.Sprintf("call %d\n%s", calls.Add(1), result), nil
	})); err != nil {
		b.Fatal(err)
	}
	model := cannedModel{
		call:   recordStream(b, openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "noop", Arguments: `{"n":1}`}}}),
		answer: recordStream(b, openaitest.Turn{Content: "Done: the tool said what it did, in 80 lines."}),
	}
	cfg := defaults()
	cfg.BaseURL = "http://model.invalid/v1"
	// The canned model reports no usage, and the estimate of 4 bytes a
	// token would pass 0.8 of 128K near turn 200: the window is large
	// here, so that what is measured is the step, not a compaction.
	cfg.ContextWindow = 1 << 20
	a := newAgent(context.Background(), cfg, "k", reg, nil, &http.Client{Transport: model})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conv := a.NewConversation()
	start := time.Now()
	for i := range 200 {
		if _, err := conv.Turn(context.Background(), fmt.Sprintf("Question %d: run the tool and tell me what it says.", i), Output{}); err != nil {
			b.Fatal(err)
		}
	}
	build := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	base, _ := conv.snapshot()
	if len(base) != 800 {
		b.Fatalf("%d messages, want 800", len(base))
	}
	u, err := conv.Context(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := a.NewConversation()
		// The conversation as it stands after turn 200: its history, and
		// the JSON its last request kept (replaced, never changed, by
		// the next request, so the map can be shared).
		c.history = base
		c.enc.Share(&conv.enc)
		if _, err := c.Turn(context.Background(), "One more: run the tool.", Output{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/step@200")
	b.ReportMetric(float64(build.Nanoseconds())/400, "ns/step-avg-0..200")
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heap-bytes@200")
	b.ReportMetric(float64(u.Bytes), "request-bytes@200")
	b.ReportMetric(float64(u.Total), "est-tokens@200")
}
