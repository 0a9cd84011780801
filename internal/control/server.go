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

	"github.com/dsh-host/dsh-host/services/tools"
)

// The endpoints. Each answers JSON; /v1/call answers NDJSON lines (call
// Line), progress first, the result last. A failure is a 4xx or 5xx
// status with {"error": "..."}.
const (
	pathHello   = "/v1/hello"   // GET: Hello
	pathStatus  = "/v1/status"  // GET: Status
	pathTools   = "/v1/tools"   // GET: ToolList
	pathCall    = "/v1/call"    // POST CallRequest: NDJSON callLine...
	pathPrompt  = "/v1/prompt"  // GET: Prompt
	pathCommand = "/v1/command" // POST CommandRequest: commands.Reply
	pathReload  = "/v1/reload"  // POST: ReloadResult

	pathResources = "/v1/resources" // POST ResourcesRequest: ResourceList
	pathRead      = "/v1/read"      // POST ReadRequest: ReadAnswer
)

// Hello identifies the host behind a socket.
type Hello struct {
	PID  int    `json:"pid"`
	File string `json:"file"`
}

// callLine is one line of a call's answer.
type callLine struct {
	Progress *tools.Progress `json:"progress,omitempty"`
	Result   *wireResult     `json:"result,omitempty"`
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
}

// Server serves a Local's answers on a control socket.
type Server struct {
	srv    *http.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	refuse *refuser
}

// Serve answers on l from local until Close, within the socket's limits
// (limits.go).
func Serve(l net.Listener, local *Local, logger *slog.Logger) *Server {
	return serve(l, local, logger, defaultLimits())
}

func serve(l net.Listener, local *Local, logger *slog.Logger, lim limits) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel, refuse: newRefuser()}
	mux := http.NewServeMux()
	handle := func(pattern string, fn func(w http.ResponseWriter, r *http.Request)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			s.wg.Add(1)
			defer s.wg.Done()
			fn(w, r)
		})
	}
	handle("GET "+pathHello, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, Hello{PID: os.Getpid(), File: local.File})
	})
	handle("GET "+pathStatus, func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return local.Status(r.Context()) })
	})
	handle("GET "+pathTools, func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return local.Tools(r.Context()) })
	})
	handle("GET "+pathPrompt, func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return local.Prompt(r.Context()) })
	})
	handle("POST "+pathCommand, func(w http.ResponseWriter, r *http.Request) {
		var req CommandRequest
		if !readJSON(w, r, &req) {
			return
		}
		answer(w, func() (any, error) { return local.Command(r.Context(), req) })
	})
	handle("POST "+pathResources, func(w http.ResponseWriter, r *http.Request) {
		var req ResourcesRequest
		if !readJSON(w, r, &req) {
			return
		}
		answer(w, func() (any, error) { return local.Resources(r.Context(), req) })
	})
	handle("POST "+pathRead, func(w http.ResponseWriter, r *http.Request) {
		var req ReadRequest
		if !readJSON(w, r, &req) {
			return
		}
		answer(w, func() (any, error) { return local.Read(r.Context(), req) })
	})
	handle("POST "+pathReload, func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return local.Reload(r.Context()) })
	})
	handle("POST "+pathCall, func(w http.ResponseWriter, r *http.Request) {
		var req CallRequest
		if !readJSON(w, r, &req) {
			return
		}
		serveCall(w, r, local, req)
	})
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
	refused := &rateLog{every: refuseEvery, emit: func(n int) {
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

// Close stops listening, cancels the requests in flight and waits for
// their handlers to return.
func (s *Server) Close() error {
	s.cancel()
	err := s.srv.Close()
	s.wg.Wait()
	s.refuse.stop()
	return err
}

// serveCall runs req, writing its progress lines as they come and then
// the result. A client that goes away (Ctrl-C) cancels the call.
func serveCall(w http.ResponseWriter, r *http.Request, local *Local, req CallRequest) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // the value's JSON as the standalone printer writes it
	var mu sync.Mutex
	ended := false
	ctx := r.Context()
	if req.Progress {
		req.Report = func(p tools.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if !ended {
				enc.Encode(callLine{Progress: &p})
				rc.Flush()
			}
		}
	}
	res, err := local.Call(ctx, req)
	mu.Lock()
	defer mu.Unlock()
	ended = true
	if err != nil {
		// Nothing was written yet: the status can still say it failed.
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	out := &wireResult{Content: res.Content, Value: res.Value, Failed: res.Failed}
	if res.Err != nil {
		out.Error = res.Err.Error()
		for kind, target := range errKinds {
			if errors.Is(res.Err, target) {
				out.Kind = kind
				break
			}
		}
	}
	enc.Encode(callLine{Result: out})
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
}

func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(errorBody{Error: err.Error()})
}
