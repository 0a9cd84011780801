package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/openaitest"
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
				body, err := a.requestBody(msgs, tj, len(asm.Tools) > 0)
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
