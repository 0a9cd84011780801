package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// slowGates are the gates of test-slow-start instances, by config name.
var slowGates sync.Map // string -> chan struct{}

// gates numbers the gates, so that a test run again (-count) gets a new one.
var gates atomic.Int64

func newGate(t *testing.T) string { return fmt.Sprintf("%s-%d", t.Name(), gates.Add(1)) }

func slowGate(name string) chan struct{} {
	ch, _ := slowGates.LoadOrStore(name, make(chan struct{}))
	return ch.(chan struct{})
}

// test-slow-start is a server slow to connect: its Apply registers the
// tool late and returns only once its gate (config gate) is closed, as an
// eager MCP server's Apply waits for its server's first answer.
func init() {
	type config struct {
		Gate string `yaml:"gate"`
	}
	host.Register(host.Definition[config]{
		Name: "test-slow-start",
		// The gateway's own: it starts in the gateway's wave, as an MCP
		// client does.
		Inject: []host.Dep{host.Require(tools.Key), host.Optional(attachments.Key), host.Optional(resources.Key)},
		Apply: func(s *host.Scope, c config) error {
			select {
			case <-slowGate(c.Gate):
			case <-s.Context().Done():
				return s.Context().Err()
			}
			_, err := host.Get(s, tools.Key).Register(s, echo("late"))
			return err
		},
	})
}

// slowComposition starts a gateway with listWait, the echo tool, and a
// slow server behind gate; it returns the gateway's URL and a channel
// that gives the first update's outcome once the slow server settles.
func slowComposition(t *testing.T, h *host.Host, listWait, gate string) (url string, updated <-chan error) {
	t.Helper()
	port := freePort(t)
	c, err := host.ParseComposition("composition.yml", []byte(fmt.Sprintf(`plugins:
  - {id: gateway, name: gateway, config: {http: "127.0.0.1:%d", listWait: %s}}
  - {id: echo, name: test-echo}
  - {id: slow, name: test-slow-start, config: {gate: %s}}
`, port, listWait, gate)), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Update(context.Background(), c) }()
	waitGateway(t, h, host.StateActive, nil)
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), done
}

func readyz(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestListsWaitForTheServersStarting: a tools/list made while a server of
// the composition is still connecting waits for it (within listWait), and
// holds its tool; /readyz is 503 until then, naming the entry.
func TestListsWaitForTheServersStarting(t *testing.T) {
	h := testHost(t)
	gate := newGate(t)
	url, updated := slowComposition(t, h, "1m", gate)
	// Before its wave begins the host says "not started yet", then
	// "starting": either names the entry.
	if code, body := readyz(t, url); code != http.StatusServiceUnavailable ||
		!(strings.Contains(body, "entry slow is starting") || strings.Contains(body, "entry slow is not started yet")) {
		t.Errorf("/readyz while slow starts: %d %q, want 503 naming the entry", code, body)
	}
	cs := connect(t, url)
	g, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatal("no gateway")
	}
	// The release comes once the list is in the gateway (its only request
	// in flight), not after a sleep: a list that does not wait is
	// answered before it, without late.
	type listed struct {
		res *mcp.ListToolsResult
		err error
	}
	first := make(chan listed, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		res, err := cs.ListTools(ctx, nil)
		first <- listed{res, err}
	}()
	released := false
	defer func() { // a test failed before the release still ends the start
		if !released {
			close(slowGate(gate))
		}
	}()
	// (Or answered already: a list that does not wait.)
	mcptest.WaitFor(t, wait, "the list in the gateway", func() bool { return g.posts.count() == 1 || len(first) > 0 })
	close(slowGate(gate))
	released = true
	l := <-first
	if l.err != nil {
		t.Fatalf("the first tools/list: %v", l.err)
	}
	var names []string
	for _, tl := range l.res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "late") || !slices.Contains(names, "echo") {
		t.Errorf("the first tools/list = %q, want echo and late", names)
	}
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, wait, "/readyz to say ready", func() bool {
		code, _ := readyz(t, url)
		return code == http.StatusOK
	})
}

// TestListsWaitAtMostListWait: past listWait, a list is answered with
// what is there; the server that comes later is announced.
func TestListsWaitAtMostListWait(t *testing.T) {
	h := testHost(t)
	gate := newGate(t)
	url, updated := slowComposition(t, h, "100ms", gate)
	changed := make(chan struct{}, 10)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if names := toolNames(t, cs); slices.Contains(names, "late") || !slices.Contains(names, "echo") {
		t.Errorf("the first tools/list = %q, want echo without late (still starting)", names)
	}
	close(slowGate(gate))
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	for names := []string(nil); !slices.Contains(names, "late"); names = toolNames(t, cs) {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("no tools/list_changed brought late")
		}
	}
}

// TestListWaitEndsWithTheGateway: a list waiting for the servers starting
// does not hold the gateway's Close (which waits for the requests in
// flight) until listWait.
func TestListWaitEndsWithTheGateway(t *testing.T) {
	h := testHost(t)
	gate := newGate(t)
	url, updated := slowComposition(t, h, "10m", gate)
	defer func() {
		close(slowGate(gate))
		<-updated
	}()
	cs := connect(t, url)
	listed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*wait)
		defer cancel()
		_, err := cs.ListTools(ctx, nil)
		listed <- err
	}()
	g, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatal("no gateway")
	}
	// Closed while the list waits: once it is in the gateway (its only
	// request in flight), not after a sleep.
	mcptest.WaitFor(t, wait, "the list in the gateway", func() bool { return g.posts.count() == 1 || len(listed) > 0 })
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * wait):
		t.Fatal("Close still waits for a list held by listWait")
	}
	<-listed // bounded by its context
}

func TestSomeOf(t *testing.T) {
	for _, tt := range []struct {
		ids  []string
		want string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c"}, "a, b, c"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c and 2 more"},
	} {
		if got := someOf(tt.ids, 3); got != tt.want {
			t.Errorf("someOf(%q) = %q, want %q", tt.ids, got, tt.want)
		}
	}
}
