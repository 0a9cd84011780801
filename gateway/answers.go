package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sentWriter is the gateway's ResponseWriter around every HTTP request:
// it knows whether any of the answer went out (the panic net and a drain's
// cut decide on it), lets a drain cut an answer not yet begun (to answer
// 503 in its place), and holds every large write to the gateway's answer
// budget.
type sentWriter struct {
	http.ResponseWriter
	// state is unsent, sent or cut; a cut writer discards what go-sdk
	// writes, and its request is answered 503 once go-sdk is done.
	state atomic.Int32
	// budget, when set, bounds the answer bytes held for slow clients.
	budget *answerBudget
	// code is the status of the answer, once its status line is written
	// (countRefusals).
	code atomic.Int32
}

const (
	unsent int32 = iota
	sent
	cut
)

// sent reports whether any of the answer (its status line) went out.
func (w *sentWriter) sent() bool { return w.state.Load() == sent }

// markCut cuts the answer if none of it went out, and reports whether it
// did.
func (w *sentWriter) markCut() bool { return w.state.CompareAndSwap(unsent, cut) }

// begin reports whether the writer writes through (not cut), marking the
// answer begun.
func (w *sentWriter) begin() bool {
	return w.state.CompareAndSwap(unsent, sent) || w.state.Load() == sent
}

func (w *sentWriter) WriteHeader(code int) {
	if code >= 200 && !w.begin() {
		return
	}
	if code >= 200 {
		w.code.CompareAndSwap(0, int32(code))
	}
	w.ResponseWriter.WriteHeader(code)
}

// status is the answer's status: what was written, 503 for an answer a
// drain cut (refuseDraining answers it so), 0 while none is.
func (w *sentWriter) status() int {
	if w.state.Load() == cut {
		return http.StatusServiceUnavailable
	}
	return int(w.code.Load())
}

func (w *sentWriter) Write(p []byte) (int, error) {
	if !w.begin() {
		return len(p), nil
	}
	w.code.CompareAndSwap(0, http.StatusOK)
	if w.budget == nil || len(p) <= writeChunk {
		return w.ResponseWriter.Write(p)
	}
	if !w.budget.take(len(p)) {
		return w.overBudget(p)
	}
	defer w.budget.give(len(p))
	return w.ResponseWriter.Write(p)
}

// Flush is http.Flusher's, which go-sdk asks for through
// http.ResponseController: a cut answer is not flushed.
func (w *sentWriter) Flush() {
	if !w.begin() { // a flush sends the status line
		return
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *sentWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// DefaultAnswerBudget is how many bytes of answers the gateway holds at
// once for clients that have not taken them yet (maxHeldAnswerBytes).
const DefaultAnswerBudget = 64 << 20

// answerBudget bounds the bytes of answers being written to clients at
// once, over the whole gateway. A write takes its bytes until the client
// has them (a client that stops reading holds them for up to
// writeTimeout); one that would pass the budget is answered with an error
// in its place. Writes up to writeChunk always pass: they are what a
// socket's buffers take at once.
type answerBudget struct {
	max  int64
	held atomic.Int64
}

func (b *answerBudget) take(n int) bool {
	if b.held.Add(int64(n)) > b.max {
		b.held.Add(-int64(n))
		return false
	}
	return true
}

func (b *answerBudget) give(n int) { b.held.Add(-int64(n)) }

// overBudget answers, in place of the server-sent event p (a JSON-RPC
// response too large for the budget), a JSON-RPC error with the same id;
// a notification that large is dropped. The event is go-sdk's: one
// "data:" line holding {"jsonrpc":"2.0","id":...}, the id first.
func (w *sentWriter) overBudget(p []byte) (int, error) {
	id, ok := eventResponseID(p)
	if !ok {
		return len(p), nil
	}
	msg := fmt.Sprintf("the answer (%s) is not sent: the gateway already holds %s of answers for clients that have not read them yet, its limit (maxHeldAnswerBytes); retry later",
		byteSize(int64(len(p))), byteSize(w.budget.max))
	if int64(len(p)) > w.budget.max { // a retry cannot help: say so
		msg = fmt.Sprintf("the answer (%s) is not sent: it is larger on its own than the gateway's limit on answers held for clients (maxHeldAnswerBytes, %s); ask for less, or raise the limit",
			byteSize(int64(len(p))), byteSize(w.budget.max))
	}
	data, err := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, &jsonrpc.Error{Code: codeBusy, Message: msg}})
	if err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintf(w.ResponseWriter, "event: message\ndata: %s\n\n", data); err != nil {
		return 0, err
	}
	return len(p), nil
}

// eventResponseID returns the id of the JSON-RPC response in the
// server-sent event p, reading no further than the id.
func eventResponseID(p []byte) (json.RawMessage, bool) {
	i := bytes.Index(p, []byte("data: "))
	if i < 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(p[i+len("data: "):]))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		switch key {
		case "id":
			return v, true
		case "method", "params", "result":
			// A notification or request, or a response with its id
			// after the result: not go-sdk's response.
			return nil, false
		}
	}
	return nil, false
}

// byteSize renders n bytes for a person.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
