package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/tools"
	"github.com/openai/openai-go/v3"

	// The composition of the tests: the built-in services, an MCP client
	// of the fixture server and folding.
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/plugins/agent/chatapi"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	_ "github.com/dsh-host/dsh-host/plugins/mcpoutput"
	_ "github.com/dsh-host/dsh-host/services/attachments"
	_ "github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/settings"
	_ "github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	leaks.VerifyTestMain(m)
}

// testKeyEnv is the variable the test agents read their key from.
const testKeyEnv = "AGENT_TEST_KEY"

// env is a running test host: the fixture MCP server (folded), an agent
// entry talking to a scripted server, and the fixture's event file.
type env struct {
	h      *host.Host
	agent  *Agent
	reg    *tools.Registry
	srv    *openaitest.Server
	events string
	slept  *sleeps
	// comp is the composition's text, for tests that change it.
	comp string
}

// start runs a host with the fixture server, mcp-fold and an agent entry on
// srv; extra is more YAML of the agent's config, indented six spaces.
func start(t *testing.T, srv *openaitest.Server, extra string) *env {
	t.Helper()
	return startWith(t, srv, "", extra)
}

// startWith is start with more flags of the fixture server (fixtureArgs,
// YAML list items such as `, -sample`).
func startWith(t *testing.T, srv *openaitest.Server, fixtureArgs, extra string) *env {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	t.Setenv(testKeyEnv, "sk-test-key")
	events := filepath.Join(t.TempDir(), "events")
	comp := fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
      args: [-instructions, "Prefer the add tool for sums.", -progress%s]
      env: {FIXTURE_CANCEL_FILE: %q}
      sandbox: {write: [%q]}
      # all: only the agent's Secrets keep its key from the server.
      inheritEnv: all
  - id: fold
    name: mcp-fold
  - id: agent
    name: agent
    config:
      baseUrl: %s
      apiKeyEnv: %s
%s`, mcptest.FixtureBinary(t), fixtureArgs, events, filepath.Dir(events), srv.URL, testKeyEnv, extra)
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	c, err := host.ParseComposition("composition.yml", []byte(comp), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	a, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatalf("no agent service; status: %+v", host.Find(h.Status(), "agent"))
	}
	reg, _ := host.Lookup(h, tools.Key)
	sl := &sleeps{}
	// Retries in tests wait for nothing: the waits asked for are recorded.
	a.apiCfg.Retry.Backoff = time.Millisecond
	a.apiCfg.Retry.Sleep = sl.sleep
	a.api = chatapi.New(a.apiCfg)
	return &env{h: h, agent: a, reg: reg, srv: srv, events: events, slept: sl, comp: comp}
}

// sleeps records the waits of the retry policy instead of sleeping.
type sleeps struct {
	mu    sync.Mutex
	total time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.total += d
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) sum() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// output collects a turn's output parts.
type output struct {
	text, reasoning, status mcptest.SyncBuffer
}

func (o *output) out() Output {
	return Output{Text: &o.text, Reasoning: &o.reasoning, Status: &o.status}
}

// messages decodes request i's messages.
func messages(t *testing.T, srv *openaitest.Server, i int) []openaitest.Message {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= i {
		t.Fatalf("%d requests, want more than %d", len(reqs), i)
	}
	m, err := reqs[i].Messages()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitLine waits (bounded) for path to hold line.
func waitLine(t *testing.T, path, line string) {
	t.Helper()
	mcptest.WaitFor(t, 30*time.Second, "line "+line+" in "+path, func() bool {
		b, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			if l == line {
				return true
			}
		}
		return false
	})
}

// sessionTurn is a turn as the loop commits it: a question, a tool call, its
// result, the answer.
func sessionTurn(i int, result string) []openai.ChatCompletionMessageParamUnion {
	asst := openai.ChatCompletionAssistantMessageParam{}
	asst.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID:       "call_" + string(rune('a'+i%26)),
		Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "mcp_call", Arguments: `{"tool":"mcp__demo__add","arguments":{"a":1,"b":2}}`},
	}}}
	answer := openai.ChatCompletionAssistantMessageParam{}
	answer.Content.OfString = openai.String("The sum is 3.\nAnything else? <é>")
	return []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("What is 1+2?\nPlease use the tool."),
		{OfAssistant: &asst},
		openai.ToolMessage(result, "call_"+string(rune('a'+i%26))),
		{OfAssistant: &answer},
	}
}

func marshalAll(t testing.TB, msgs []openai.ChatCompletionMessageParamUnion) string {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
