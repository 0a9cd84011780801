package bridge

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/calls"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/sampling"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitTimeout = 10 * time.Second

// conn is one in-memory session to a go-sdk server.
type conn struct {
	s      *mcp.ClientSession
	closed chan struct{}
}

func (c *conn) Session() *mcp.ClientSession { return c.s }
func (c *conn) Closed() <-chan struct{}     { return c.closed }

// link hands out one connection and records what the bridge asks of it.
type link struct {
	cn       *conn
	released int
	probed   int
}

func (l *link) Acquire(context.Context) (Conn, func(), error) { return l.cn, func() {}, nil }
func (l *link) Current() (Conn, error)                        { return l.cn, nil }
func (l *link) Release(cancel context.CancelFunc, _ error)    { l.released++; cancel() }
func (l *link) Probe(Conn)                                    { l.probed++ }

// serve connects a client to srv in memory; opts are the client's.
func serve(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *conn {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return &conn{s: cs, closed: make(chan struct{})}
}

// A sync publishes the server's resources, templates and prompts on the
// services; a prompt command gets the prompt through the link; a read goes
// to the server and its context is released; Clear withdraws it all.
func TestSyncPublishesAndClearWithdraws(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{URI: "x://doc", Name: "doc", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "x://doc", Text: "hello"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "x://item/{id}", Name: "item"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("no")
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi " + req.Params.Arguments["who"]}}}}, nil
		})
	l := &link{cn: serve(t, srv, nil)}
	scope := host.NewScope(context.Background(), "s", slog.New(slog.DiscardHandler))
	defer scope.Dispose(waitTimeout)
	res, cmds := resources.New(nil), commands.New()
	b, err := New(Options{Server: "s", Label: "mcp-client(s)", Log: slog.New(slog.DiscardHandler), Scope: scope,
		Resources: res, Commands: cmds, ListTimeout: waitTimeout, RequestTimeout: waitTimeout}, l)
	if err != nil {
		t.Fatal(err)
	}
	b.Sync(context.Background(), l.cn, Resources|Prompts, true)
	if got := res.List(resources.Filter{}); len(got) != 1 || got[0].URI != "x://doc" {
		t.Errorf("resources = %+v", got)
	}
	if got := res.Templates(resources.Filter{}); len(got) != 1 {
		t.Errorf("templates = %+v", got)
	}
	read, err := res.Read(context.Background(), "x://doc", nil)
	if err != nil || l.released != 1 {
		t.Fatalf("read: %+v, %v (released %d)", read, err, l.released)
	}
	reply := cmds.Run(context.Background(), tools.Caller{}, "/"+PublicPromptName("s", "greet")+" who=you")
	if reply.Error || !strings.Contains(reply.Text, "hi you") {
		t.Errorf("prompt command = %+v", reply)
	}
	b.Clear()
	if got := res.List(resources.Filter{}); len(got) != 0 {
		t.Errorf("resources after Clear = %+v", got)
	}
	if got := cmds.List(); len(got) != 0 {
		t.Errorf("commands after Clear: %v", got)
	}
}

// A 2025-11-25 question names no call: it is the only call's, whose
// caller's sampler answers it while its silence waits; with no call and no
// sampler it is refused.
func TestQuestionsFindTheirCall(t *testing.T) {
	table := calls.New(calls.Options{TimeoutMs: 60_000, Logger: slog.New(slog.DiscardHandler)})
	q := &Questions{Server: "s", Label: "mcp-client(s)", Log: slog.New(slog.DiscardHandler), Elicit: elicit.New(), Calls: table}
	req := &mcp.CreateMessageWithToolsRequest{Params: &mcp.CreateMessageWithToolsParams{}}
	if _, err := q.OnSample(context.Background(), req); !errors.Is(err, sampling.ErrNoSampler) {
		t.Errorf("no call, no sampler: %v", err)
	}
	asked := 0
	ch := &tools.Channels{Sampler: func(context.Context, string, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
		asked++
		return &mcp.CreateMessageWithToolsResult{Model: "m"}, nil
	}}
	call, _ := table.Start(context.Background(), &mcp.CallToolParams{}, "", ch)
	defer call.Finish()
	if res, err := q.OnSample(context.Background(), req); err != nil || res.Model != "m" || asked != 1 {
		t.Errorf("the only call's sampler: %+v, %v (asked %d)", res, err, asked)
	}
	// Nobody answers elicitations: declined, the reason in _meta.
	er := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "ok?", RequestedSchema: map[string]any{"type": "object"}}}
	res, err := q.OnElicit(context.Background(), er)
	if err != nil || res.Action != "decline" || res.Meta[ReasonKey] == nil {
		t.Errorf("elicitation without an answerer: %+v, %v", res, err)
	}
}
