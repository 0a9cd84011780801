package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// The endpoints. Each answers JSON; a call, a chat turn and a watch
// answer NDJSON lines (streamLine), the result last. A failure is a 4xx
// or 5xx status with {"error": "..."}.
const (
	pathHello    = "/v1/hello"    // GET: Hello
	pathStatus   = "/v1/status"   // GET: app.Status
	pathWatch    = "/v1/watch"    // GET: NDJSON streamLine{status}...
	pathTools    = "/v1/tools"    // POST app.ToolsRequest: app.ToolList
	pathCall     = "/v1/call"     // POST callWire: NDJSON streamLine...
	pathAnswer   = "/v1/answer"   // POST answerRequest: {}
	pathPrompt   = "/v1/prompt"   // POST app.ToolsRequest: app.Prompt
	pathCommand  = "/v1/command"  // POST commandWire: commands.Reply, or NDJSON streamLine... when it asks
	pathCommands = "/v1/commands" // GET: []app.CommandInfo
	pathReload   = "/v1/reload"   // POST: app.ReloadResult

	pathResources = "/v1/resources" // POST app.ResourcesRequest: app.ResourceList
	pathRead      = "/v1/read"      // POST app.ReadRequest: app.ReadAnswer

	pathReview  = "/v1/review"  // POST app.TrustRequest: app.Review
	pathTrust   = "/v1/trust"   // POST app.TrustRequest: commands.Reply
	pathExplain = "/v1/explain" // POST app.ExplainRequest: commands.Reply

	pathAudit = "/v1/audit" // POST app.AuditQuery: NDJSON streamLine{audit}...

	pathChat         = "/v1/chat"          // POST chatWire: NDJSON streamLine...
	pathChatCompact  = "/v1/chat/compact"  // POST app.ChatCompactRequest: app.ChatCompactResult
	pathChatSession  = "/v1/chat/session"  // POST app.ChatSessionRequest: app.ChatInfo
	pathChatSessions = "/v1/chat/sessions" // GET ?conversation=ID: app.SessionList
)

// Hello identifies the host behind a socket.
type Hello struct {
	PID  int    `json:"pid"`
	File string `json:"file"`
	Home string `json:"home,omitempty"` // the host's DSH_HOME
}

// streamLine is one line of a streamed answer: a call's id (first, when
// its caller answers questions), its progress, a question, a chat event,
// a status change, and the result last.
type streamLine struct {
	Call     string           `json:"call,omitempty"`
	Progress *tools.Progress  `json:"progress,omitempty"`
	Question *questionLine    `json:"question,omitempty"`
	Event    *app.ChatEvent   `json:"event,omitempty"`
	Status   *app.StatusEvent `json:"status,omitempty"`
	Result   *wireResult      `json:"result,omitempty"`
	Chat     *app.ChatResult  `json:"chat,omitempty"`
	Audit    *app.AuditRecord `json:"audit,omitempty"`
	Reply    *commands.Reply  `json:"reply,omitempty"`
	// Error ends a stream that failed before its result; Kind is its
	// errKinds' key.
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// callWire is a call on the wire: what it asks for back.
type callWire struct {
	app.CallRequest
	WantProgress bool `json:"progress,omitempty"`
	Ask          bool `json:"ask,omitempty"`
}

// commandWire is a slash command on the wire: with Ask, its answer is a
// stream that carries its questions, and its reply last.
type commandWire struct {
	app.CommandRequest
	Ask bool `json:"ask,omitempty"`
}

// chatWire is a chat turn on the wire.
type chatWire struct {
	app.ChatRequest
	WantEvents bool `json:"events,omitempty"`
	Ask        bool `json:"ask,omitempty"`
}

// wireResult is a tools.Result on the wire. Value is written as the value
// (any) and read as its exact JSON (json.RawMessage), so that `call
// --json` prints the same bytes attached as standalone.
type wireResult struct {
	Content []tools.Content `json:"content"`
	Value   any             `json:"value"`
	Error   string          `json:"error,omitempty"`
	Kind    string          `json:"kind,omitempty"`   // errKinds' key
	Failed  bool            `json:"failed,omitempty"` // tools.Result.Failed
}

// errKinds are the errors a caller tells apart (errors.Is), by the name
// they travel under.
var errKinds = map[string]error{
	"unknown-tool": tools.ErrUnknownTool,
	"refused":      tools.ErrRefused,
	"canceled":     context.Canceled,
	"deadline":     context.DeadlineExceeded,
	// A request's own errors: what the composition does not run.
	"no-agent":    app.ErrNoAgent,
	"no-tools":    app.ErrNoTools,
	"no-commands": app.ErrNoCommands,
	"not-watched": app.ErrNotWatched,
	// A chat front end's handle the host no longer keeps: it starts a
	// new conversation.
	"no-conversation": app.ErrNoConversation,
}

// kindOf is err's errKinds key, "" when it is none of them.
func kindOf(err error) string {
	for kind, target := range errKinds {
		if errors.Is(err, target) {
			return kind
		}
	}
	return ""
}

// Server serves an app.App on a control socket.
type Server struct {
	srv    *http.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	refuse *refuser
	askers askers
	lim    limits
}

// Serve answers on l from a until Close, within the socket's limits
// (limits.go). file is what Hello names.
func Serve(l net.Listener, a app.App, file string, logger *slog.Logger) *Server {
	return serve(l, a, file, logger, defaultLimits())
}

func serve(l net.Listener, a app.App, file string, logger *slog.Logger, lim limits) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel, refuse: newRefuser(), lim: lim}
	mux := http.NewServeMux()
	handle := func(pattern string, fn func(w http.ResponseWriter, r *http.Request)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			s.wg.Add(1)
			defer s.wg.Done()
			defer func() {
				// One request's panic answers it; the host goes on.
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					logger.Error("control socket: a request panicked", "path", r.URL.Path, "panic", v)
					writeError(w, http.StatusInternalServerError, fmt.Errorf("the host failed answering %s: %v", r.URL.Path, v))
				}
			}()
			fn(w, r)
		})
	}
	get := func(path string, fn func(ctx context.Context) (any, error)) {
		handle("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			answer(w, func() (any, error) { return fn(r.Context()) })
		})
	}
	home, _ := dshhome.Dir() // the host's, as it started
	get(pathHello, func(context.Context) (any, error) { return Hello{PID: os.Getpid(), File: file, Home: home}, nil })
	get(pathStatus, func(ctx context.Context) (any, error) { return a.Status(ctx) })
	get(pathCommands, func(ctx context.Context) (any, error) { return a.Commands(ctx) })
	handle("GET "+pathChatSessions, func(w http.ResponseWriter, r *http.Request) {
		req := app.ChatSessionsRequest{Conversation: r.URL.Query().Get("conversation")}
		answer(w, func() (any, error) { return a.ChatSessions(r.Context(), req) })
	})
	handle("POST "+pathCommand, func(w http.ResponseWriter, r *http.Request) {
		var req commandWire
		if !readJSON(w, r, &req) {
			return
		}
		if !req.Ask {
			answer(w, func() (any, error) { return a.Command(r.Context(), req.CommandRequest) })
			return
		}
		s.serveCommand(w, r, a, req)
	})
	post(handle, pathTools, func(ctx context.Context, req app.ToolsRequest) (any, error) { return a.Tools(ctx, req) })
	post(handle, pathPrompt, func(ctx context.Context, req app.ToolsRequest) (any, error) { return a.Prompt(ctx, req) })
	post(handle, pathResources, func(ctx context.Context, req app.ResourcesRequest) (any, error) { return a.Resources(ctx, req) })
	post(handle, pathRead, func(ctx context.Context, req app.ReadRequest) (any, error) { return a.Read(ctx, req) })
	post(handle, pathReload, func(ctx context.Context, _ struct{}) (any, error) { return a.Reload(ctx) })
	post(handle, pathReview, func(ctx context.Context, req app.TrustRequest) (any, error) { return a.Review(ctx, req) })
	post(handle, pathTrust, func(ctx context.Context, req app.TrustRequest) (any, error) { return a.Trust(ctx, req) })
	post(handle, pathExplain, func(ctx context.Context, req app.ExplainRequest) (any, error) { return a.Explain(ctx, req) })
	post(handle, pathChatCompact, func(ctx context.Context, req app.ChatCompactRequest) (any, error) { return a.ChatCompact(ctx, req) })
	post(handle, pathChatSession, func(ctx context.Context, req app.ChatSessionRequest) (any, error) { return a.ChatSession(ctx, req) })
	handle("POST "+pathAnswer, s.askers.serveAnswer)
	handle("POST "+pathCall, func(w http.ResponseWriter, r *http.Request) {
		var req callWire
		if readJSON(w, r, &req) {
			s.serveCall(w, r, a, req)
		}
	})
	handle("POST "+pathChat, func(w http.ResponseWriter, r *http.Request) {
		var req chatWire
		if readJSON(w, r, &req) {
			s.serveChat(w, r, a, req)
		}
	})
	handle("POST "+pathAudit, func(w http.ResponseWriter, r *http.Request) {
		var q app.AuditQuery
		if readJSON(w, r, &q) {
			s.serveAudit(w, r, a, q)
		}
	})
	handle("GET "+pathWatch, func(w http.ResponseWriter, r *http.Request) { s.serveWatch(w, r, a) })
	serveUI(handle, a)
	s.srv = &http.Server{
		Handler:           bounded(mux, lim),
		ReadHeaderTimeout: lim.readHeader,
		IdleTimeout:       lim.idle,
		// Requests end with the server: a call in flight is cancelled,
		// which reaches its MCP server.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	slots := make(chan struct{}, lim.conns)
	refused := &rateLog{every: lim.refuseEvery, emit: func(n int) {
		logger.Warn("control socket: connections refused past the limit", "limit", lim.conns, "refused", n)
	}}
	listeners := []net.Listener{l}
	if su, ok := l.(*sameUser); ok && su.alias != nil {
		listeners = append(listeners, su.alias)
	}
	for _, ln := range listeners {
		capped := &capListener{Listener: ln, slots: slots, refused: refused, refuse: s.refuse}
		s.wg.Go(func() {
			if err := s.srv.Serve(capped); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("the control socket stopped answering", "err", err)
			}
		})
	}
	return s
}

// post handles a POST of a JSON request In answered by fn.
func post[In any](handle func(string, func(http.ResponseWriter, *http.Request)), path string, fn func(context.Context, In) (any, error)) {
	handle("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		var req In
		if readJSON(w, r, &req) {
			answer(w, func() (any, error) { return fn(r.Context(), req) })
		}
	})
}

// Close stops listening, cancels the requests in flight and waits for
// their handlers to return.
func (s *Server) Close() error {
	s.cancel()
	err := s.srv.Close()
	s.wg.Wait()
	s.refuse.stop()
	return err
}

// streamWriteWait is how long one line may wait for a caller that does
// not read: past it the stream ends and its request is cancelled, so a
// caller cannot hold a chat turn, a server's progress or a question's
// bound by leaving its socket unread.
const streamWriteWait = 30 * time.Second

// stream writes NDJSON lines, one at a time, each flushed; none once
// ended. A line that cannot be written within streamWriteWait ends the
// stream and cancels its request.
type stream struct {
	mu     sync.Mutex
	enc    *json.Encoder
	rc     *http.ResponseController
	cancel context.CancelFunc
	wait   time.Duration
	ended  bool
}

func (s *Server) newStream(w http.ResponseWriter, cancel context.CancelFunc) *stream {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // the value's JSON as the standalone printer writes it
	return &stream{enc: enc, rc: http.NewResponseController(w), cancel: cancel, wait: s.lim.streamWrite}
}

func (st *stream) send(line streamLine) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return errors.New("the stream has ended")
	}
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.wait))
	err := st.enc.Encode(line)
	if err == nil {
		err = st.rc.Flush()
	}
	if err != nil {
		st.ended = true
		st.cancel()
	}
	return err
}

// end sends the last line, and lifts the write deadline off the
// connection, which the next request on it reuses.
func (st *stream) end(line streamLine) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return
	}
	st.ended = true
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.wait))
	if st.enc.Encode(line) != nil {
		st.cancel()
	}
	_ = st.rc.SetWriteDeadline(time.Time{})
}

// asking returns an answerer that puts a call's questions to its caller
// through st, having sent the call's id; done ends it.
func (s *Server) asking(st *stream) (elicit.Answerer, func(), error) {
	k, done := s.askers.add(s.lim.question, func(q questionLine) error { return st.send(streamLine{Question: &q}) })
	if err := st.send(streamLine{Call: k.id}); err != nil {
		done()
		return nil, nil, err
	}
	return k, done, nil
}

// streamed runs one request whose answer streams: with ask, its questions
// go to the caller through the stream (after the id they are answered
// under); run's last line, or its error, ends the stream.
func (s *Server) streamed(w http.ResponseWriter, r *http.Request, ask bool, run func(ctx context.Context, st *stream, answer elicit.Answerer) (streamLine, error)) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st := s.newStream(w, cancel)
	var answer elicit.Answerer
	if ask {
		k, done, err := s.asking(st)
		if err != nil {
			return
		}
		defer done()
		answer = k
	}
	last, err := run(ctx, st, answer)
	if err != nil {
		st.end(streamLine{Error: err.Error(), Kind: kindOf(err)})
		return
	}
	st.end(last)
}

// serveCall runs req, writing its progress and questions as they come
// and then the result. A client that goes away (Ctrl-C) cancels the call.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, a app.App, req callWire) {
	s.streamed(w, r, req.Ask, func(ctx context.Context, st *stream, answer elicit.Answerer) (streamLine, error) {
		if req.WantProgress {
			req.Progress = func(p tools.Progress) { st.send(streamLine{Progress: &p}) }
		}
		req.Answer = answer
		res, err := a.Call(ctx, req.CallRequest)
		if err != nil {
			return streamLine{}, err
		}
		out := &wireResult{Content: res.Content, Value: res.Value, Failed: res.Failed}
		if res.Err != nil {
			out.Error, out.Kind = res.Err.Error(), kindOf(res.Err)
		}
		return streamLine{Result: out}, nil
	})
}

// serveCommand runs a slash command whose caller answers its questions.
func (s *Server) serveCommand(w http.ResponseWriter, r *http.Request, a app.App, req commandWire) {
	s.streamed(w, r, true, func(ctx context.Context, _ *stream, answer elicit.Answerer) (streamLine, error) {
		req.Answer = answer
		reply, err := a.Command(ctx, req.CommandRequest)
		return streamLine{Reply: &reply}, err
	})
}

// serveChat runs one chat turn, writing its events and questions as they
// come and then its result.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, a app.App, req chatWire) {
	s.streamed(w, r, req.Ask, func(ctx context.Context, st *stream, answer elicit.Answerer) (streamLine, error) {
		if req.WantEvents {
			req.Events = func(e app.ChatEvent) { st.send(streamLine{Event: &e}) }
		}
		req.Answer = answer
		res, err := a.Chat(ctx, req.ChatRequest)
		return streamLine{Chat: &res}, err
	})
}

// serveAudit writes the trail's records, then (following) those to come
// until the client goes. A client that does not read holds up only this
// handler's reading of the files.
func (s *Server) serveAudit(w http.ResponseWriter, r *http.Request, a app.App, q app.AuditQuery) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	seq, err := a.Audit(ctx, q)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	st := s.newStream(w, cancel)
	st.rc.Flush()
	for rec, err := range seq {
		if err != nil {
			st.end(streamLine{Error: err.Error(), Kind: kindOf(err)})
			return
		}
		if st.send(streamLine{Audit: &rec}) != nil {
			return
		}
	}
	st.end(streamLine{Result: &wireResult{}})
}

// serveWatch writes the host's status changes until the client goes. A
// client that does not read blocks only this handler: the app's channel
// drops (and counts) what it cannot hold.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, a app.App) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ch, err := a.Watch(ctx)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	st := s.newStream(w, cancel)
	// The header goes now: the client knows it is following.
	st.rc.Flush()
	for ev := range ch {
		if st.send(streamLine{Status: &ev}) != nil {
			break
		}
	}
	// Drain: the channel closes once the request's context ends (or the
	// stream cancelled it, its caller not reading).
	for range ch {
	}
}

// answer writes fn's value, or its error as a 503.
func answer(w http.ResponseWriter, fn func() (any, error)) {
	v, err := fn()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, v)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("the request is over %d bytes", mbe.Limit))
			return false
		}
		writeError(w, http.StatusBadRequest, fmt.Errorf("the request is not JSON: %w", err))
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

type errorBody struct {
	Error string `json:"error"`
	// Refused: the host refused the connection before any request
	// (refuser); Error says why.
	Refused bool `json:"refused,omitempty"`
	// Kind is the error's errKinds' key, so errors.Is holds attached too.
	Kind string `json:"kind,omitempty"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(errorBody{Error: err.Error(), Kind: kindOf(err)})
}
