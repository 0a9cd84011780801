package toolset

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/wire"
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
	conn, err := wire.New(tt.Wire()).Wrap(scriptTransport{first}).Connect(ctx)
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
	conn, err = wire.New(tt.Wire()).Wrap(scriptTransport{second}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read(conn, 1)
	check("an answer under an earlier connection's id", map[string]bool{"z": false})
}

// A listing is read as go-sdk reads a Tool: members in any order, escaped
// or not, matched exactly (a member go-sdk would not read names no tool).
func TestListedTasks(t *testing.T) {
	for _, tt := range []struct {
		name, result string
		want         map[string]bool
	}{
		{"plain", `{"tools":[{"name":"a","execution":{"taskSupport":"required"}},{"name":"b"}]}`, map[string]bool{"a": true, "b": false}},
		{"execution first, escaped", `{"tools":[{"\u0065xecution":{"task\u0053upport":"re\u0071uired"},"n\u0061me":"a"}]}`, map[string]bool{"a": true}},
		{"other case", `{"tools":[{"name":"a","Execution":{"taskSupport":"required"}},{"name":"b","NAME":"c","execution":{"taskSupport":"required"}}]}`, map[string]bool{"a": false, "b": true}},
		{"last duplicate wins", `{"tools":[{"name":"x","name":"a","execution":{"taskSupport":"optional"},"execution":{"taskSupport":"required"}}]}`, map[string]bool{"a": true}},
		{"a duplicate tool that requires", `{"tools":[{"name":"a","execution":{"taskSupport":"required"}},{"name":"a"}]}`, map[string]bool{"a": true}},
		{"no tools", `{"tool":[{"name":"a","execution":{"taskSupport":"required"}}]}`, map[string]bool{}},
	} {
		got := listedTasks(json.RawMessage(tt.result))
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			continue
		}
		for n, w := range tt.want {
			if v, ok := got[n]; !ok || v != w {
				t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			}
		}
	}
}
