package calls

import (
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/wire"
)

// Progress up to the result. go-sdk reads a connection's messages in
// order, but hands a response to its call at once while notifications
// wait on a queue of their own: the last progress notifications a server
// sends before its result may be handled after the call is over, and
// dropped then. The table's wire subscriber counts, as they are read, the
// progress notifications of each call and how many preceded its
// response, so that Finish can wait (at most catchUpMax) until they have
// been relayed: the caller hears a call's progress in order, up to its
// result. (docs/upstream.md: "Notifications read before a response are
// handled after it".)

// catchUpMax bounds how long Finish waits for the progress read before
// the result to be relayed (a caller's progress function that hangs).
const catchUpMax = time.Second

// Wire is the table's subscriber to the wire (package wire): its calls'
// progress notifications and responses.
func (t *Table) Wire() wire.Subscriber {
	return wire.Subscriber{Methods: []string{"tools/call", "notifications/progress"}, Received: t.onWire, Awaits: t.awaits}
}

// awaits reports whether the answer to req matters: only to a call of the
// table whose progress was read on the wire (with none, Finish has
// nothing to wait for), which spares decoding most answers.
func (t *Table) awaits(req *jsonrpc.Request) bool {
	if t.progressing.Load() == 0 {
		return false // no call has progress to wait for: nothing to decode
	}
	meta, _ := wire.Member(req.Params, "_meta")
	call := t.lookup(token(meta))
	if call == nil {
		return false
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	return call.wire > 0
}

// WireLogs is the subscriber that counts the server's log messages, for a
// connection whose messages all come in one order (stdio, legacy SSE):
// a call answered after n of them waits until n are handled. Over
// Streamable HTTP a log message and an answer may come on two streams,
// so SettleLogs waits for a quiet period there instead.
func (t *Table) WireLogs() wire.Subscriber {
	t.watchesWire.Store(true)
	return wire.Subscriber{Methods: []string{"notifications/message"}, Received: func(wire.Message) { t.logsOnWire.Add(1) }}
}

func (t *Table) onWire(m wire.Message) {
	if m.Response == nil {
		// notifications/progress: its token is a member of its params.
		if call := t.lookup(token(m.Request.Params)); call != nil {
			call.mu.Lock()
			if call.wire == 0 && !call.done {
				t.progressing.Add(1) // until Finish
			}
			call.wire++
			call.mu.Unlock()
		}
		return
	}
	// A tools/call answered: its token is in its params' _meta, written by
	// Start (a call made otherwise has none of the table's).
	meta, _ := wire.Member(m.Request.Params, "_meta")
	if call := t.lookup(token(meta)); call != nil {
		call.mu.Lock()
		call.answeredAfter = call.wire
		call.mu.Unlock()
	}
}

// token returns the string progressToken of obj, or "".
func token(obj json.RawMessage) string {
	raw, ok := wire.Member(obj, "progressToken")
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func (t *Table) lookup(token string) *Call {
	if token == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[token]
}
