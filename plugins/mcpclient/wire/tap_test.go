package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a subscriber that notes what it hears, one line each:
// "<method>" for a server's message, "<method> #<id>" for a response.
type recorder struct {
	mu    sync.Mutex
	heard []string
}

func (r *recorder) sub(methods ...string) Subscriber {
	return Subscriber{Methods: methods, Received: func(m Message) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if m.Response != nil {
			r.heard = append(r.heard, fmt.Sprintf("%s #%v", m.Request.Method, m.Response.ID.Raw()))
			return
		}
		r.heard = append(r.heard, m.Request.Method)
	}}
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.heard)
}

// scriptConn is a connection whose server says what the test queued, as
// go-sdk decodes it; what the client writes is kept.
type scriptConn struct {
	in      []string
	written []jsonrpc.Message
}

func (c *scriptConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.in) == 0 {
		return nil, io.EOF
	}
	msg, err := jsonrpc.DecodeMessage([]byte(c.in[0]))
	c.in = c.in[1:]
	return msg, err
}

func (c *scriptConn) Write(_ context.Context, msg jsonrpc.Message) error {
	c.written = append(c.written, msg)
	return nil
}
func (c *scriptConn) Close() error      { return nil }
func (c *scriptConn) SessionID() string { return "" }

type scriptTransport struct{ conn *scriptConn }

func (t scriptTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

func request(t testing.TB, s string) *jsonrpc.Request {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return msg.(*jsonrpc.Request)
}

// On a wrapped connection, a subscriber hears the server's messages of its
// methods however they are written, and the answers to the client's
// requests of them, once each: not an answer to a request of another
// method, to no request, to a cancelled one, or to one of an earlier
// connection.
func TestConnectionTap(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	tap := New(rec.sub("tools/call", "notifications/progress"))
	first := &scriptConn{in: []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"a","progress":1}}`,
		`{"method":"notifications\/progress","jsonrpc":"2.0","params":{}}`,
		`{"jsonrpc":"2.0","\u006dethod":"notifications/\u0070rogress","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,
		`{"result":{},"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, // answered already
		`{"jsonrpc":"2.0","id":2,"result":{}}`, // tools/list: not followed
		`{"jsonrpc":"2.0","id":3,"result":{}}`, // cancelled
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
	}}
	conn, err := tap.Wrap(scriptTransport{first}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}`, // answered on no connection
	} {
		if err := conn.Write(ctx, request(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	for range len(first.in) {
		if _, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"notifications/progress", "notifications/progress", "notifications/progress", "tools/call #1", "notifications/progress"}
	if got := rec.got(); !slices.Equal(got, want) {
		t.Errorf("heard %q, want %q", got, want)
	}
	if len(first.written) != 5 {
		t.Errorf("the server got %d messages, want all 5", len(first.written))
	}

	second := &scriptConn{in: []string{`{"jsonrpc":"2.0","id":4,"result":{}}`}}
	conn, err = tap.Wrap(scriptTransport{second}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); len(got) != len(want) {
		t.Errorf("an answer under an earlier connection's id was heard: %q", got[len(want):])
	}
}

// A server of 2025-03-26 may send a JSON-RPC batch: go-sdk reads it over
// stdio as the messages it holds, in order, and so does the tap.
func TestBatchOverStdio(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	tap := New(rec.sub("tools/call", "notifications/progress"))
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	conn, err := tap.Wrap(&mcp.IOTransport{Reader: clientR, Writer: clientW}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go io.Copy(io.Discard, serverR)
	if err := conn.Write(ctx, request(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	go fmt.Fprint(serverW, `[{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":7,"result":{}}]`+"\n")
	for range 2 {
		if _, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := rec.got(), []string{"notifications/progress", "tools/call #7"}; !slices.Equal(got, want) {
		t.Errorf("heard %q, want %q", got, want)
	}
}

// A subscriber may mend a request of its methods; others go as they are.
func TestMend(t *testing.T) {
	ctx := context.Background()
	sc := &scriptConn{}
	tap := New(Subscriber{Methods: []string{"prompts/get"}, Mend: func(r *jsonrpc.Request) *jsonrpc.Request {
		cp := *r
		cp.Params = json.RawMessage(`{"mended":true}`)
		return &cp
	}})
	conn, err := tap.Wrap(scriptTransport{sc}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
	} {
		if err := conn.Write(ctx, request(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, m := range sc.written {
		got = append(got, string(m.(*jsonrpc.Request).Params))
	}
	if want := []string{`{"mended":true}`, `{}`}; !slices.Equal(got, want) {
		t.Errorf("sent params %q, want %q", got, want)
	}
}

// A connection keeps at most maxPending requests awaiting an answer (a
// call whose cancellation was lost): the older ones are forgotten.
func TestPendingIsBounded(t *testing.T) {
	rec := &recorder{}
	l := New(rec.sub("tools/call")).newLine()
	for i := range 3 * maxPending {
		l.sent(request(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{}}`, i)))
	}
	if n := len(l.pending); n > maxPending {
		t.Errorf("%d requests awaiting an answer kept, want at most %d", n, maxPending)
	}
	last, _ := jsonrpc.MakeID(float64(3*maxPending - 1))
	l.received(&jsonrpc.Response{ID: last, Result: json.RawMessage(`{}`)})
	if got := rec.got(); len(got) != 1 {
		t.Errorf("the newest request's answer: heard %q", got)
	}
}

// Member matches keys as go-sdk does: exactly, unescaped, the last of
// duplicates.
func TestMember(t *testing.T) {
	for _, tt := range []struct {
		obj, key, want string
		ok             bool
	}{
		{`{"a":1,"_meta":{"x":2}}`, "_meta", `{"x":2}`, true},
		{`{"\u005fmeta":3}`, "_meta", `3`, true},
		{`{"_META":3}`, "_meta", ``, false},
		{`{"_meta":1,"_meta":2}`, "_meta", `2`, true},
		{`[1]`, "_meta", ``, false},
		{``, "_meta", ``, false},
		{`{"_meta":` + strings.Repeat("[", 10) + strings.Repeat("]", 10) + `}`, "_meta", strings.Repeat("[", 10) + strings.Repeat("]", 10), true},
	} {
		v, ok := Member(json.RawMessage(tt.obj), tt.key)
		if ok != tt.ok || string(v) != tt.want {
			t.Errorf("Member(%s, %q) = %s, %v; want %s, %v", tt.obj, tt.key, v, ok, tt.want, tt.ok)
		}
	}
}
