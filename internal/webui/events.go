package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/services/policy/audit"
)

// Server-sent events: the pages follow the host's status, the trail and
// the asks. A page that stops reading is cut after eventWait; the
// console's close ends every stream.

const (
	eventWait = 30 * time.Second
	// maxStreams bounds the streams open at once: each of the Servers and
	// Audit pages holds a request on the host's control socket, whose
	// connections are few (64), and tabs left open must not use them up.
	maxStreams = 16
	// auditBacklog is how far back the Audit page starts.
	auditBacklog = 24 * time.Hour
)

// events is one page's stream.
type events struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// stream runs fn as one of the console's event streams, or answers 503
// when maxStreams are open. fn's request context ends with the console,
// so that whatever fn follows with it (the host's status, the trail, the
// asks) ends, and the shutdown need not wait for the page to go.
func (c *Console) stream(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case c.streams <- struct{}{}:
			defer func() { <-c.streams }()
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			go func() {
				select {
				case <-c.done:
					cancel()
				case <-ctx.Done():
				}
			}()
			fn(w, r.WithContext(ctx))
		default:
			w.Header().Set("Retry-After", "10")
			http.Error(w, fmt.Sprintf("%d pages follow this console already: close some tabs", maxStreams), http.StatusServiceUnavailable)
		}
	}
}

// openEvents answers 200 and starts the stream; the request's context,
// which ends with the console (stream), ends it.
func openEvents(w http.ResponseWriter) *events {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	e := &events{w: w, rc: http.NewResponseController(w)}
	e.rc.Flush()
	return e
}

// send writes one event; false once the page is gone.
func (e *events) send(name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	_ = e.rc.SetWriteDeadline(time.Now().Add(eventWait))
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return false
	}
	return e.rc.Flush() == nil
}

func (c *Console) statusEvents(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ch, err := c.a.Watch(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	e := openEvents(w)
	for ev := range ch {
		if !e.send("status", ev) {
			cancel()
			break
		}
	}
	for range ch {
		// Closed once the request's context ends.
	}
}

// auditRow is one call of the trail as the Audit page shows it.
type auditRow struct {
	Time     time.Time       `json:"time"`
	Caller   string          `json:"caller"`
	Tool     string          `json:"tool"`
	Server   string          `json:"server"`
	Args     json.RawMessage `json:"args,omitempty"`
	Decision string          `json:"decision"`
	Rule     string          `json:"rule"`
	Answer   string          `json:"answer"`
	Outcome  string          `json:"outcome"`
	Error    string          `json:"error"`
	Ms       float64         `json:"ms"`
}

func rowOf(r audit.Record) auditRow {
	caller := strings.TrimSpace(strings.Join([]string{r.Caller.Kind, r.Caller.ID, r.Caller.Subject}, " "))
	return auditRow{Time: r.Time, Caller: caller, Tool: r.Tool, Server: r.Server, Args: r.Args, Decision: r.Decision,
		Rule: r.Rule, Answer: r.Answer, Outcome: r.Outcome, Error: r.Error, Ms: r.DurationMs}
}

// auditEvents streams the trail of the last day, then its calls as they
// are written; the filters are the page's (server, tool glob, decision,
// caller kind).
func (c *Console) auditEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	server, decision, caller := q.Get("server"), q.Get("decision"), q.Get("caller")
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	seq, err := c.a.Audit(ctx, app.AuditQuery{Dir: c.opt.AuditDir, Tool: q.Get("tool"), Since: time.Now().Add(-auditBacklog), Follow: true})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	e := openEvents(w)
	for rec, err := range seq {
		if err != nil {
			e.send("failure", map[string]string{"error": err.Error()})
			return
		}
		rr := rec.Record
		if server != "" && rr.Server != server || decision != "" && rr.Decision != decision || caller != "" && rr.Caller.Kind != caller {
			continue
		}
		if !e.send("call", rowOf(rr)) {
			return
		}
	}
}

func (c *Console) askEvents(w http.ResponseWriter, r *http.Request) {
	if c.opt.Asks == nil {
		http.Error(w, "no approvals reach this console", http.StatusNotFound)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	e := openEvents(w)
	// Subscribed first: an ask that comes meanwhile is sent twice at
	// worst, which the page tells by its id.
	ch := c.opt.Asks.Subscribe(ctx)
	for _, a := range c.opt.Asks.Pending() {
		if !e.send("ask", askLine{Event: askbroker.Event{Ask: &a}}) {
			cancel()
			break
		}
	}
	for ev := range ch {
		if !e.send("ask", askLine{Event: ev, Fresh: ev.Ask != nil}) {
			cancel()
			break
		}
	}
	for range ch {
	}
}
