package webui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/askbroker"
)

//go:embed assets
var assets embed.FS

// Options configures a console.
type Options struct {
	// Addr is where it listens: a loopback HOST:PORT (default
	// 127.0.0.1:0, a free port).
	Addr string
	// AuditDir is the policy's trail, for the Audit page's chain check
	// (hostrun.AuditDir); empty: no check offered.
	AuditDir string
	// Asks is the composition's approval broker, which this console
	// answers; nil: AsksNote says why none reach it. The console does not
	// close it.
	Asks     *askbroker.Broker
	AsksNote string
	Logger   *slog.Logger
}

// Console is a running web console.
type Console struct {
	a     app.App
	opt   Options
	gate  *gate
	pages map[string]*template.Template
	srv   *http.Server
	ln    net.Listener
	wg    sync.WaitGroup
	// done ends the pages' event streams when the console closes.
	done    chan struct{}
	streams chan struct{} // a slot per event stream open (maxStreams)
	closed  sync.Once
	// ownAsks: Close closes opt.Asks too (StartFor opened it).
	ownAsks bool
}

// Start serves the console of a on opt.Addr until Close.
func Start(a app.App, opt Options) (*Console, error) {
	if opt.Addr == "" {
		opt.Addr = "127.0.0.1:0"
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if err := loopback(opt.Addr); err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opt.Addr)
	if err != nil {
		return nil, fmt.Errorf("web console: %w", err)
	}
	c := &Console{a: a, opt: opt, gate: newGate(ln.Addr()), pages: pages, ln: ln, done: make(chan struct{}), streams: make(chan struct{}, maxStreams)}
	c.srv = &http.Server{
		Handler:           c.gate.wrap(c.routes()),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(opt.Logger.Handler(), slog.LevelDebug),
	}
	c.wg.Go(func() {
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opt.Logger.Error("the web console stopped answering", "err", err)
		}
	})
	return c, nil
}

// URL is the address to open: it carries the run's token, which the first
// page load trades for a cookie.
func (c *Console) URL() string {
	return c.gate.origin + "/?token=" + c.gate.token
}

// Close stops the console and ends its pages' streams.
func (c *Console) Close() error {
	c.closed.Do(func() {
		close(c.done)
		if c.ownAsks {
			c.opt.Asks.Close() // every open ask is denied
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.srv.Shutdown(ctx)
	if err != nil {
		err = c.srv.Close()
	}
	c.wg.Wait()
	return err
}

// routes are the console's pages, actions and streams.
func (c *Console) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	page := func(pattern string, fn func(r *http.Request) (string, any, error)) {
		mux.HandleFunc(pattern, c.recovered(func(w http.ResponseWriter, r *http.Request) {
			name, data, err := fn(r)
			c.render(w, name, data, err)
		}))
	}
	page("GET /{$}", c.serversPage)
	page("GET /servers", c.serversPage)
	page("GET /tools", c.toolsPage)
	page("GET /tool", c.toolPage)
	page("GET /trust", c.trustPage)
	page("GET /approvals", c.approvalsPage)
	page("GET /audit", c.auditPage)
	page("GET /composition", c.compositionPage)
	act := func(pattern string, fn func(w http.ResponseWriter, r *http.Request)) {
		mux.HandleFunc(pattern, c.recovered(fn))
	}
	act("POST /api/call", c.callAction)
	act("POST /api/trust", c.trustAction)
	act("POST /api/reload", c.reloadAction)
	act("POST /api/entry", c.entryAction)
	act("POST /api/restart", c.restartAction)
	act("POST /api/login", c.loginAction)
	act("POST /api/answer", c.answerAction)
	act("GET /api/verify", c.verifyAction)
	act("GET /events/status", c.stream(c.statusEvents))
	act("GET /events/audit", c.stream(c.auditEvents))
	act("GET /events/asks", c.stream(c.askEvents))
	return mux
}

// recovered answers a request whose handler panicked with an error: one
// request's panic never ends the process.
func (c *Console) recovered(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				c.opt.Logger.Error("web console: a request panicked", "path", r.URL.Path, "panic", v)
				http.Error(w, fmt.Sprintf("the console failed answering %s: %v", r.URL.Path, v), http.StatusInternalServerError)
			}
		}()
		fn(w, r)
	}
}

// Pending returns the asks waiting for this console (none when it answers
// none).
func (c *Console) Pending() []askbroker.Ask {
	if c.opt.Asks == nil {
		return nil
	}
	return c.opt.Asks.Pending()
}
