package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/host"
)

// httpShutdownTimeout bounds how long a listener waits for requests in
// flight once its instance is disposed.
const httpShutdownTimeout = 5 * time.Second

// The listener's timeouts: a client has readHeaderTimeout to send a
// request's headers and readBodyTimeout more to send its body, and an
// idle keep-alive connection is closed after idleTimeout. A response, such
// as the long-lived GET event stream or a slow tool call's answer, has no
// time limit as a whole, but a client must take each writeChunk of it
// within writeTimeout, or its connection is closed.
const (
	readHeaderTimeout = 10 * time.Second
	readBodyTimeout   = 30 * time.Second
	idleTimeout       = 60 * time.Second
	writeTimeout      = 30 * time.Second
)

// writeChunk is how much of a response a client must take within
// writeTimeout: a deadline per chunk, not per response, cuts a client that
// stops reading without cutting a large answer to a slow one.
const writeChunk = 64 << 10

// fdReserve is how many descriptors the connection cap leaves free below
// the process's limit (RLIMIT_NOFILE), whatever maxConnections says, so
// that the host can always restart its MCP servers (pipes, files, sockets).
const fdReserve = 256

// HTTPHandler returns the gateway as a Streamable HTTP endpoint. It refuses,
// before go-sdk sees the request:
//   - a request reaching a loopback address under a Host that is not
//     loopback, with 403 (DNS rebinding), and closes the connection;
//   - a request with a foreign Origin, with 403 (DNS-rebinding protection:
//     only http(s) origins on localhost, 127.0.0.1 or [::1], on any port, or
//     the origin the request was addressed to, are let in; a request without
//     Origin, which is what non-browser clients send, is let in), and closes
//     the connection;
//   - when a token is set, a request without it, with 401 and
//     WWW-Authenticate: Bearer, and closes the connection;
//   - an initialize past MaxSessions, with 503 (logged as one line per
//     interval with the number refused);
//   - a JSON-RPC batch (a body that is a JSON array), with 400.
//
// A request's body must arrive within readBodyTimeout of its headers.
//
// The session caps and timeout, the answer budget and statelessness are
// the gateway's Config's; token, when not empty, is the bearer token
// every request must carry (compared in constant time).
func (g *Gateway) HTTPHandler(token string) http.Handler {
	refusals := g.refusalTally("sessions", "maxSessions")
	context.AfterFunc(g.ctx, refusals.Stop)
	return g.handler(serveOptions{token: token}, refusals)
}

// handler is HTTPHandler with serve's options; refused counts the
// sessions refused.
func (g *Gateway) handler(o serveOptions, refused *tally) http.Handler {
	l := g.cfg.Limits
	if l.MaxSessions <= 0 {
		l.MaxSessions = DefaultMaxSessions
	}
	if l.SessionTimeout <= 0 {
		l.SessionTimeout = DefaultSessionTimeout
	}
	if o.readBody <= 0 {
		o.readBody = readBodyTimeout
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{Logger: g.sdkLogger(), SessionTimeout: l.SessionTimeout, Stateless: g.cfg.Stateless})
	trusted, _ := parseProxies(l.TrustedProxies)
	caps := sessionCaps{max: l.MaxSessions, perCaller: perCaller(l.MaxSessionsPerCaller, l.MaxSessions), proxies: trusted}
	inner := g.refuseDraining(g.limitSessions(refuseBatches(h), caps, refused))
	token := o.token
	if o.auth != nil {
		ids := g.identityLimits(o.auth.limits)
		g.idLimits.Store(ids)
		inner = requireAuth(o.auth.verifier, ids, inner)
		token = "" // the verifier takes it
	} else if token != "" {
		inner = staticTokenInfo(inner)
	}
	budget := l.MaxHeldAnswerBytes
	if budget == 0 {
		budget = DefaultAnswerBudget
	}
	var b *answerBudget
	if budget > 0 {
		b = &answerBudget{max: budget}
		g.answers.Store(b)
	}
	return g.recoverHTTP(g.countRefusals(bodyDeadline(protect(inner, token), o.readBody)), b)
}

// refuseDraining answers 503 to every request once the gateway drains
// (Drain): the requests in flight are past it and finish; a new session,
// a new request, or a new event stream goes to another gateway. The
// connection closes after the answer, so that a load balancer's
// keep-alive connection moves on too.
func (g *Gateway) refuseDraining(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A GET's event stream lasts as long as its session: a drain
		// does not wait for it, and the dispose ends it.
		counted := r.Method != http.MethodGet
		sw, _ := w.(*sentWriter) // HTTPHandler's own, around every request
		if !counted || sw == nil {
			sw = nil
		}
		if !g.posts.enter(counted, sw) {
			refuseStopping(w, "Service Unavailable: the gateway is draining (shutting down): it takes no new session or request; retry on another gateway")
			return
		}
		if counted {
			defer g.posts.leave(sw)
		}
		next.ServeHTTP(w, r)
		if sw != nil && sw.state.Load() == cut {
			// Nothing of the answer went out before the drain gave up on
			// it: 503, which a load balancer may send to another gateway,
			// rather than an empty 200 it cannot tell from an answer.
			h := w.Header()
			for k := range h {
				delete(h, k)
			}
			refuseStopping(sw.ResponseWriter, "Service Unavailable: the gateway stopped before answering (its drain outlasted drainTimeout); nothing was answered: retry on another gateway")
		}
	})
}

// refuseStopping answers 503 with msg, closing the connection after.
func refuseStopping(w http.ResponseWriter, msg string) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Retry-After", "5")
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// healthHandlers serves /healthz and /readyz for load balancers and
// orchestrators, beside /mcp on the gateway's listener. They carry no
// tool and no data, so neither the token nor the Origin and Host checks
// apply: a health checker sends none of them.
//   - /healthz answers 200 while the process answers at all.
//   - /readyz answers 200 once the gateway serves the whole surface
//     (Gateway.Readiness: every eager MCP server's tools, or its failure in
//     dsh-host status once its retries have passed its startupTimeoutMs,
//     and every lazy server's catalog), and 503 with a
//     one-line reason before then and while the gateway drains; a reload
//     does not take readiness back.
//
// They are answered outside the connection caps too (capListener.health):
// a liveness probe must not restart a healthy gateway whose connections
// idle clients hold.
func (g *Gateway) healthHandlers(mux *http.ServeMux, readiness func() (bool, string)) {
	serve := func(w http.ResponseWriter, r *http.Request) {
		status, body, _ := g.health(r.URL.Path, readiness)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	mux.HandleFunc("/healthz", serve)
	mux.HandleFunc("/readyz", serve)
}

// health answers the health path (/healthz, /readyz): its status and body;
// ok is false for any other path.
func (g *Gateway) health(path string, readiness func() (bool, string)) (status int, body string, ok bool) {
	switch path {
	case "/healthz":
		return http.StatusOK, "ok\n", true
	case "/readyz":
		ready, why := true, ""
		if g.draining.Load() {
			ready, why = false, "draining"
		} else if readiness != nil {
			ready, why = readiness()
		}
		if !ready {
			return http.StatusServiceUnavailable, "not ready: " + why + "\n", true
		}
		return http.StatusOK, "ready\n", true
	}
	return 0, "", false
}

// maxLeadingSpace bounds the white space refuseBatches skips before a
// body's first byte; go-sdk refuses a body that large anyway.
const maxLeadingSpace = mcp.DefaultMaxRequestBodyBytes

// refuseBatches answers 400 to a POST whose body is a JSON array, a
// JSON-RPC batch. go-sdk still accepts batches from a client speaking
// 2025-03-26 and runs all their calls at once, so one small body would
// bypass every cap on calls in flight; batching left MCP in 2025-06-18,
// and no client needs it. Only the body's first byte is looked at, and
// the body reaches go-sdk as sent (less its leading white space).
func refuseBatches(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		br := bufio.NewReader(r.Body)
		for range maxLeadingSpace {
			b, err := br.ReadByte()
			if err != nil {
				break
			}
			if b == ' ' || b == '\t' || b == '\r' || b == '\n' {
				continue
			}
			br.UnreadByte()
			if b == '[' {
				http.Error(w, "Bad Request: JSON-RPC batches are not accepted; send one request per POST (MCP 2025-06-18 and later have no batches)", http.StatusBadRequest)
				return
			}
			break
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{br, r.Body}
		next.ServeHTTP(w, r)
	})
}

// refusalTally logs refusals at a cap as one line per interval.
func (g *Gateway) refusalTally(what, key string) *tally {
	return newTally(tallyInterval, func(n int) {
		g.logger.Warn("gateway: refused "+what+" past the limit; raise "+key+" in the gateway entry if they are legitimate", "refused", n)
	})
}

// limitSessions answers 503 to a request that would open a session past
// max. A POST without Mcp-Session-Id opens one; the count is the
// gateway's initialized HTTP sessions (those with an ID) plus the openings
// in flight, so that concurrent initializes cannot overshoot. A session
// not yet initialized is an opening's own (go-sdk creates it before
// reading the body, and closes it if the initialize fails): counted as the
// opening, not twice, or a slow body would hold two places.
//
// Each caller (callers.go) may hold caps.perCaller of them: its sessions
// are those its initializes opened (the Mcp-Session-Id of their answers),
// forgotten once closed or expired; one more is answered 429 saying so.
func (g *Gateway) limitSessions(next http.Handler, caps sessionCaps, refused *tally) http.Handler {
	var (
		mu        sync.Mutex
		opening   int
		openingBy = map[string]int{}
		owner     = map[string]string{} // session id → caller
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		caller, shown := caps.proxies.callerOf(r)
		mu.Lock()
		n, mine := opening, openingBy[caller]
		live := make(map[string]bool, len(owner))
		for ss := range g.server.Sessions() {
			if id := ss.ID(); id != "" && ss.InitializeParams() != nil {
				n++
				live[id] = true
			}
		}
		for id, c := range owner {
			switch {
			case !live[id]:
				delete(owner, id)
			case c == caller:
				mine++
			}
		}
		if n >= caps.max {
			mu.Unlock()
			refused.Add()
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "10")
			http.Error(w, fmt.Sprintf("Service Unavailable: the gateway serves %d sessions, its limit (maxSessions); end one (DELETE) or retry later", caps.max), http.StatusServiceUnavailable)
			return
		}
		if mine >= caps.perCaller {
			mu.Unlock()
			refused.Add()
			w.Header().Set("Retry-After", "10")
			http.Error(w, fmt.Sprintf("Too Many Requests: %s has %d sessions open, its share of the gateway's (maxSessionsPerCaller); end one (DELETE) or retry later", shown, caps.perCaller), http.StatusTooManyRequests)
			return
		}
		opening++
		openingBy[caller]++
		mu.Unlock()
		defer func() {
			mu.Lock()
			opening--
			if openingBy[caller]--; openingBy[caller] <= 0 {
				delete(openingBy, caller)
			}
			// go-sdk names the session in the initialize's answer.
			if id := w.Header().Get("Mcp-Session-Id"); id != "" {
				owner[id] = caller
			}
			mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// sessionCaps are limitSessions' caps.
type sessionCaps struct {
	max, perCaller int
	proxies        proxies
}

// bodyDeadline gives a request's body d to arrive. http.Server's
// ReadTimeout cannot: it would also end the long-lived GET event stream.
// net/http lifts the deadline itself once the body is read (it then reads
// the connection in the background to notice a client leaving), so a slow
// tool call is not cut; TestLongRequestsOutliveTimeouts holds it to that.
// A body that stops short fails with a timeout, and its connection closes.
// Every method with a body gets the deadline, not only POST: net/http
// reads what is left of a small body after the handler, which, with no
// deadline, waits forever for a body that is never sent.
func bodyDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		next.ServeHTTP(w, r)
	})
}

// serveOptions are what listen needs besides the gateway's Config: what
// apply resolved of it (the static token, the verifier, the certificate).
type serveOptions struct {
	token string
	auth  *oauth
	// tls, when set, serves https with its certificate (tls.go).
	tls *certReloader
	// The timeouts; zero means the defaults (tests shorten them).
	readHeader, readBody, idle, write time.Duration
	// writeFailed is capListener.writeFailed (tests).
	writeFailed func()
	// tally is the interval of the listener's refusal lines; zero means
	// tallyInterval (tests lengthen it, so that what they count is one
	// line however slowly they run).
	tally time.Duration
}

// listen serves g as Streamable HTTP at /mcp on addr until s is disposed,
// and returns the endpoint's URL. The dispose ends the requests in flight
// (their event streams included), waiting for them at most
// httpShutdownTimeout.
func listen(s *host.Scope, g *Gateway, addr string, o serveOptions) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("http %s: %w (is another gateway running there? pick another port)", addr, err)
	}
	if o.tls != nil {
		ln = tlsListener(ln, o.tls)
	}
	return serve(s, g, ln, o), nil
}

// serve serves g on ln until s is disposed (see listen).
func serve(s *host.Scope, g *Gateway, ln net.Listener, o serveOptions) string {
	if o.readHeader <= 0 {
		o.readHeader = readHeaderTimeout
	}
	if o.idle <= 0 {
		o.idle = idleTimeout
	}
	if o.write <= 0 {
		o.write = writeTimeout
	}
	maxConns, why := maxConnections(g.cfg.MaxConnections, openFileLimit())
	if why != "" {
		s.Logger().Warn("gateway: "+why, "maxConnections", maxConns)
	}
	connRefusals := g.refusalTally("connections", "maxConnections")
	sessionRefusals := g.refusalTally("sessions", "maxSessions")
	if o.tally > 0 {
		connRefusals.setInterval(o.tally)
		sessionRefusals.setInterval(o.tally)
	}
	capped := newCapListener(ln, maxConns, connRefusals)
	capped.writeTimeout, capped.writeFailed = o.write, o.writeFailed
	capped.perCaller = perCaller(g.cfg.MaxConnectionsPerCaller, maxConns)
	capped.proxies, _ = parseProxies(g.cfg.TrustedProxies)
	capped.health = func(path string) (int, string, bool) { return g.health(path, g.Readiness) }
	capped.counted = g.metrics.refused
	// Requests (and their long-lived event streams) derive from base, so
	// cancelling it at dispose ends them instead of waiting them out.
	base, cancelBase := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.handler(o, sessionRefusals))
	if o.auth != nil {
		o.auth.verifier.Routes(mux)
	}
	g.healthHandlers(mux, g.Readiness)
	srv := &http.Server{
		Handler:           g.recoverHTTP(mux, nil),
		ReadHeaderTimeout: o.readHeader,
		IdleTimeout:       o.idle,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.Logger().Handler(), slog.LevelWarn),
	}
	g.onDrain = func() { srv.SetKeepAlivesEnabled(false) }
	if err := errors.Join(g.metrics.gauge(connectionsDef, func() int { return int(capped.open.Load()) }),
		g.metrics.gauge(heldAnswerBytesDef, func() int {
			if b := g.answers.Load(); b != nil {
				return int(b.held.Load())
			}
			return 0
		})); err != nil {
		// Only a second listener of one run collides: the first one's
		// gauges stay reported.
		s.Logger().Warn("gateway: the listener's gauges are not reported", "err", err)
	}
	scheme := "http://"
	if o.tls != nil {
		scheme = "https://"
	}
	addr := ln.Addr().String()
	g.addr.Store(&addr)
	url := scheme + addr + "/mcp"
	s.Go("http "+url, func(ctx context.Context) {
		defer connRefusals.Stop()
		defer sessionRefusals.Stop()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(capped) }()
		select {
		case err := <-served:
			// The instance stays active, so a reload, which retries only
			// failed ones, leaves it as it is.
			s.Logger().Error("the gateway's HTTP listener stopped; edit its entry, or restart, to serve again", "url", url, "err", err)
			cancelBase()
			srv.Close()
			capped.wait()
			return
		case <-ctx.Done():
		}
		cancelBase()
		sctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			s.Logger().Warn("requests still running when the gateway stopped were cut", "url", url, "err", err)
			srv.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Logger().Warn("the gateway's HTTP listener", "url", url, "err", err)
		}
		capped.wait()
	})
	s.Logger().Info("gateway listening", "url", url, "token", o.token != "", "oauth", o.auth != nil, "tls", o.tls != nil, "maxConnections", maxConns)
	return url
}

// protect wraps next with the Origin and bearer-token checks.
func protect(next http.Handler, token string) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rebound(r) {
			// go-sdk would refuse it with 403 too, but keep the
			// connection: a rebinding page must not hold one.
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q for a loopback address", r.Host), http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, r.Host) {
			// Closed too: a refused page must not keep a connection.
			w.Header().Set("Connection", "close")
			http.Error(w, "Forbidden: cross-origin requests are not accepted from "+origin, http.StatusForbidden)
			return
		}
		if len(want) > 0 {
			if !bearer.HasStatic(r.Header.Get("Authorization"), want) {
				// Closed after the answer: a client without the token
				// has no use for the connection, and must not hold it.
				w.Header().Set("Connection", "close")
				w.Header().Set("WWW-Authenticate", `Bearer realm="dsh-host"`)
				http.Error(w, "Unauthorized: send Authorization: Bearer <token>, the gateway's token (from its tokenEnv variable or tokenFile)", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// rebound reports whether r reached a loopback address under a Host that
// is not loopback: a DNS-rebinding page. It is go-sdk's own check, to the
// letter ("localhost" in lower case only), so that every request go-sdk
// would refuse is refused here first, with its connection closed.
func rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopbackAddr(local.String()) && !loopbackAddr(r.Host)
}

// loopbackAddr reports whether addr (host, or host:port) is "localhost" or
// a loopback IP.
func loopbackAddr(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		h = strings.Trim(addr, "[]")
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// originAllowed reports whether a browser at origin may call the gateway:
// a loopback origin on any port, or the very host the request addresses.
func originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // including the opaque origin "null"
	}
	if bearer.LoopbackHost(u.Hostname()) {
		return true
	}
	return host != "" && strings.EqualFold(u.Host, host)
}
