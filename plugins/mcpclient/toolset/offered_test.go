package toolset

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptConn is a connection whose server says what the test queued.
type scriptConn struct{ in []string }

func (c *scriptConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.in) == 0 {
		return nil, io.EOF
	}
	msg, err := jsonrpc.DecodeMessage([]byte(c.in[0]))
	c.in = c.in[1:]
	return msg, err
}
func (c *scriptConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (c *scriptConn) Close() error                                 { return nil }
func (c *scriptConn) SessionID() string                            { return "" }

type scriptTransport struct{ conn *scriptConn }

func (t scriptTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// A tool the server stops listing, or lists without taskSupport "required",
// is offered again; requests of an earlier connection are forgotten, and
// an answer of the new one under a reused id is not read as a listing.
func TestTaskToolsFollowTheListing(t *testing.T) {
	ctx := context.Background()
	tt := &Tasks{}
	write := func(conn mcp.Connection, req string) {
		t.Helper()
		msg, err := jsonrpc.DecodeMessage([]byte(req))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	read := func(conn mcp.Connection, n int) {
		t.Helper()
		for range n {
			if _, err := conn.Read(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string, want map[string]bool) {
		t.Helper()
		for name, w := range want {
			if got := tt.required(name); got != w {
				t.Errorf("%s: required(%q) = %v, want %v", when, name, got, w)
			}
		}
	}
	const req = `{"jsonrpc":"2.0","method":"tools/list","id":`
	first := &scriptConn{in: []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}},{"name":"b","execution":{"taskSupport":"required"}}]}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}}]}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"a"}],"nextCursor":"p2"}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"c","execution":{"taskSupport":"required"}}]}}`,
	}}
	conn, err := tt.Watch(scriptTransport{first}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(conn, req+`1,"params":{}}`)
	write(conn, req+`2,"params":{}}`) // never answered
	read(conn, 1)
	check("first listing", map[string]bool{"a": true, "b": true})
	write(conn, req+`3,"params":{}}`)
	read(conn, 1)
	check("b no longer listed", map[string]bool{"a": true, "b": false})
	write(conn, req+`4,"params":{}}`)
	read(conn, 1)
	write(conn, req+`5,"params":{"cursor":"p2"}}`)
	read(conn, 1)
	check("two pages", map[string]bool{"a": false, "c": true})

	second := &scriptConn{in: []string{
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"z","execution":{"taskSupport":"required"}}]}}`,
	}}
	conn, err = tt.Watch(scriptTransport{second}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tt.mu.Lock()
	left := len(tt.listing)
	tt.mu.Unlock()
	if left != 0 {
		t.Errorf("a new connection kept %d listing request(s) of the earlier one", left)
	}
	read(conn, 1)
	check("an answer under an earlier connection's id", map[string]bool{"z": false})
}

// The answer to a tools/list POST is read as go-sdk reads it: a JSON body,
// or an SSE stream whose events may come before it, span data lines, end
// lines with CRLF, or be too large to hold (then not read).
func TestListingBodies(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	answer := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}}]}}`
	huge := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}}],"pad":"` + strings.Repeat("x", maxListingPeek) + `"}}`
	for _, tt := range []struct {
		name  string
		whole bool
		body  string
		want  bool
	}{
		{"json", true, answer, true},
		{"json, another id", true, strings.Replace(answer, `"id":7`, `"id":8`, 1), false},
		{"sse", false, "event: message\ndata: " + answer + "\n\n", true},
		{"sse after a notification, CRLF", false, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\r\n\r\n: comment\r\nid: 1\r\ndata: " + answer + "\r\n\r\n", true},
		{"sse, data over two lines", false, "data: " + answer[:24] + "\ndata: " + answer[24:] + "\n\n", true},
		{"sse, past the bound", false, "data: " + huge + "\n\n", false},
		{"json, past the bound", true, huge, false},
	} {
		tools := &Tasks{}
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.body)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			l := &listingBody{ReadCloser: io.NopCloser(r), tt: tools, id: id, first: true, whole: tt.whole}
			got, err := io.ReadAll(l)
			if err != nil || string(got) != tt.body {
				t.Fatalf("%s: the body did not pass whole: %v", tt.name, err)
			}
			if tools.required("a") != tt.want {
				t.Errorf("%s (one byte %v): required = %v, want %v", tt.name, oneByte, !tt.want, tt.want)
			}
			if strings.Contains(tt.name, "past the bound") {
				break // a byte at a time through 8 MiB is slow under -race
			}
		}
	}
}
