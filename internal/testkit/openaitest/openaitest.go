// Package openaitest is a scripted OpenAI-compatible chat-completions server
// for tests. It listens on 127.0.0.1 (httptest), answers POST
// /chat/completions with the real streaming wire format (Server-Sent Events,
// one `data: {chunk}` per event, then `data: [DONE]`), plays the Turns it was
// given one request at a time, and records every request as it arrived.
//
// A Turn is either an answer (reasoning, text and tool calls, streamed in
// small pieces as a real model does) or a failure: an HTTP error status with
// headers (a 429 with Retry-After), a stream cut midway, or an answer that
// stops and waits for the client to go away (for cancellation tests).
//
// ThinkingModels makes the server hold a request to DeepSeek's
// thinking-mode rule, as DeepSeek's API does (thinking.go); ContextLimit
// holds it to a context window (limit.go).
package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Turn is the server's answer to one request.
type Turn struct {
	// Reasoning is streamed as DeepSeek's delta.reasoning_content before
	// the content.
	Reasoning string
	// Content is the answer text.
	Content string
	// ToolCalls are streamed after the content; their arguments arrive in
	// two pieces.
	ToolCalls []ToolCall
	// Usage, when set, is sent in a last chunk with no choices (as for
	// stream_options.include_usage).
	Usage *Usage

	// Status, when not 0 or 200, answers with that status and ErrorBody
	// (an OpenAI-style error object when empty) instead of a stream.
	Status    int
	Header    map[string]string
	ErrorBody string
	// CutAfter > 0 sends that many chunks, then drops the connection
	// without [DONE] or the end of the chunked body.
	CutAfter int
	// Hold sends the chunks of Reasoning and Content, then waits for the
	// client to go away (or the server to close) without finishing.
	Hold bool
	// Finish, when set, is the finish_reason sent in place of stop or
	// tool_calls ("length": an answer cut at max_tokens).
	Finish string
	// Malformed, when set, is sent as an event's data after the first
	// chunk: a stream that is not the API's JSON (a proxy's page).
	Malformed string
}

// ToolCall is one function call the model asks for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Usage is what a turn reports in its usage chunk.
type Usage struct {
	PromptTokens, CompletionTokens, CachedTokens int
}

// Request is one request as the server received it.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Field returns the raw bytes of the top-level field key of the body, as
// sent (nil when absent).
func (r Request) Field(key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m[key]
}

// Message is a request message, decoded loosely for assertions.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	// Raw is the whole message as sent.
	Raw json.RawMessage `json:"-"`
}

// Text returns the message's content as text: a string content as is, an
// array of parts as its text parts joined by "\n".
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	_ = json.Unmarshal(m.Content, &parts)
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// Messages decodes the request's messages.
func (r Request) Messages() ([]Message, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(r.Field("messages"), &raw); err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	out := make([]Message, len(raw))
	for i, m := range raw {
		if err := json.Unmarshal(m, &out[i]); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i].Raw = m
	}
	return out, nil
}

// Server is a running scripted server.
type Server struct {
	// URL is the base URL a client is configured with
	// (http://127.0.0.1:PORT/v1); requests go to URL+"/chat/completions".
	URL string

	srv     *httptest.Server
	release chan struct{}

	mu       sync.Mutex
	turns    []Turn
	requests []Request
	arrived  chan struct{} // closed and replaced at each request
	// thinking are the models held to the thinking-mode rule.
	thinking map[string]bool
	// window is ContextLimit's (0: none); overWindow counts the requests
	// refused for passing it.
	window, overWindow int
}

// New starts a server that plays turns, and closes it when the test ends.
func New(t testing.TB, turns ...Turn) *Server {
	s := &Server{turns: turns, release: make(chan struct{}), arrived: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Transport returns a RoundTripper that serves requests in-process, without
// a socket: the whole answer is written, then returned as the body (so Hold
// and CutAfter do not apply). Benchmarks use it to leave the network out.
func (s *Server) Transport() http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		s.srv.Config.Handler.ServeHTTP(rec, r)
		res := rec.Result()
		res.Request = r
		return res, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Close releases held answers and stops the server; it is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Arrived returns a channel closed when the next request arrives.
func (s *Server) Arrived() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrived
}

// Left returns how many scripted turns are still to be played.
func (s *Server) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	close(s.arrived)
	s.arrived = make(chan struct{})
	tooLong, tokens := s.windowRule(body)
	if tooLong != "" {
		s.overWindow++
	}
	refusal, off := s.thinkingRule(body)
	var turn Turn
	ok := len(s.turns) > 0
	if ok && refusal == "" && tooLong == "" {
		turn, s.turns = s.turns[0], s.turns[1:]
	}
	s.mu.Unlock()
	if off {
		// Without thinking the model writes no reasoning.
		turn.Reasoning = ""
	}
	if tokens > 0 && turn.Usage == nil {
		turn.Usage = &Usage{PromptTokens: tokens, CompletionTokens: PromptTokens(len(turn.Content))}
	}

	switch {
	case tooLong != "":
		// The scripted turn stays for the next request.
		writeTooLong(w, tooLong)
	case refusal != "":
		// DeepSeek's 400; the scripted turn stays for the next request.
		writeError(w, http.StatusBadRequest, "", refusal)
	case r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions":
		writeError(w, http.StatusNotFound, "", "openaitest: only POST /v1/chat/completions is served")
	case !ok:
		writeError(w, http.StatusInternalServerError, "", "openaitest: no scripted turn left")
	case turn.Status != 0 && turn.Status != http.StatusOK:
		for k, v := range turn.Header {
			w.Header().Set(k, v)
		}
		writeError(w, turn.Status, turn.ErrorBody, fmt.Sprintf("scripted status %d", turn.Status))
	default:
		s.stream(w, r, turn)
	}
}

func writeError(w http.ResponseWriter, status int, body, message string) {
	if body == "" {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "code": nil, "param": nil}})
		body = string(b)
	}
	writeBody(w, status, body)
}

// writeCodedError is an OpenAI-style error object with its code.
func writeCodedError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "code": code, "param": "messages"}})
	writeBody(w, status, string(b))
}

func writeBody(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// stream writes turn as chat.completion.chunk events.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, turn Turn) {
	for k, v := range turn.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	sent := 0
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
		sent++
		if turn.CutAfter > 0 && sent >= turn.CutAfter {
			// net/http closes the connection without ending the
			// chunked body: the client reads an unexpected EOF.
			panic(http.ErrAbortHandler)
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-openaitest", "object": "chat.completion.chunk", "created": 1, "model": "openaitest",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if turn.Malformed != "" {
		fmt.Fprintf(w, "data: %s\n\n", turn.Malformed)
		if flusher != nil {
			flusher.Flush()
		}
	}
	for _, p := range pieces(turn.Reasoning) {
		send(chunk(map[string]any{"reasoning_content": p}, nil))
	}
	for _, p := range pieces(turn.Content) {
		send(chunk(map[string]any{"content": p}, nil))
	}
	if turn.Hold {
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	}
	for i, tc := range turn.ToolCalls {
		half := len(tc.Arguments) / 2
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments[:half]},
		}}}, nil))
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "function": map[string]any{"arguments": tc.Arguments[half:]},
		}}}, nil))
	}
	finish := "stop"
	if len(turn.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	if turn.Finish != "" {
		finish = turn.Finish
	}
	send(chunk(map[string]any{}, finish))
	if u := turn.Usage; u != nil {
		send(map[string]any{
			"id": "chatcmpl-openaitest", "object": "chat.completion.chunk", "created": 1, "model": "openaitest",
			"choices": []any{},
			"usage": map[string]any{
				"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens,
				"total_tokens":          u.PromptTokens + u.CompletionTokens,
				"prompt_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
			},
		})
	}
	io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// pieces splits s into runs of up to 4 bytes on rune boundaries, as a model
// streams a few characters at a time.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := 0
		for _, r := range s {
			l := len(string(r))
			if n > 0 && n+l > 4 {
				break
			}
			n += l
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
