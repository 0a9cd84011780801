// Package limits keeps the gateway's limits per identity: with inbound
// OAuth, each subject (and the static token's holder) has its own request
// rate, calls in flight and sessions, so that one caller exhausting its
// share leaves the others theirs. The gateway-wide caps still bound the
// sum; they are the gateway's.
//
// An identity is a token's auth.TokenInfo.UserID. A request that opens a
// session is decided over HTTP (Admit: 429 and Retry-After); every message
// of a session is decided in the MCP middleware (Middleware), where a
// refusal is an error the client's session shows.
package limits

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/dsh-host/dsh-host/host"
)

// Config is each identity's limits (a gateway entry's auth.limits). Zero
// means no limit.
type Config struct {
	// RequestsPerSecond is the sustained rate of requests (a token bucket
	// refilled at this rate, holding Burst).
	RequestsPerSecond float64 `yaml:"requestsPerSecond"`
	// Burst is how many requests may come at once above the rate
	// (default: RequestsPerSecond rounded up, at least 1).
	Burst int `yaml:"burst"`
	// CallsInFlight caps the requests (tool calls, reads...) one identity
	// has running at once, over all its sessions.
	CallsInFlight int `yaml:"callsInFlight"`
	// Sessions caps the sessions one identity has open at once.
	Sessions int `yaml:"sessions"`
}

// Validate checks c; an error is a *host.KeyError naming its key
// (requestsPerSecond...) relative to the block.
func (c *Config) Validate() error {
	switch {
	case c.RequestsPerSecond < 0 || math.IsNaN(c.RequestsPerSecond) || math.IsInf(c.RequestsPerSecond, 0):
		return host.KeyErrorf("requestsPerSecond", "%v: want a positive number, or leave it out for no limit", c.RequestsPerSecond)
	case c.Burst < 0:
		return host.KeyErrorf("burst", "%d is negative", c.Burst)
	case c.Burst > 0 && c.RequestsPerSecond == 0:
		return host.KeyErrorf("burst", "applies to requestsPerSecond, which is not set")
	case c.CallsInFlight < 0:
		return host.KeyErrorf("callsInFlight", "%d is negative; leave it out for no limit", c.CallsInFlight)
	case c.Sessions < 0:
		return host.KeyErrorf("sessions", "%d is negative; leave it out for no limit", c.Sessions)
	}
	return nil
}

// Server is what the limits read of the MCP server they guard.
type Server struct {
	// Sessions lists the server's open sessions (mcp.Server.Sessions).
	Sessions func() iter.Seq[*mcp.ServerSession]
	// Initialized reports whether a session completed its handshake.
	Initialized func(*mcp.ServerSession) bool
	// Uncounted are the methods that take no place among the calls in
	// flight (initialize, ping, notifications...).
	Uncounted func(method string) bool
	// BusyCode is the JSON-RPC error code of a refused request.
	BusyCode int64
	Logger   *slog.Logger
}

// PerIdentity keeps each identity's state. It is safe for concurrent use.
type PerIdentity struct {
	cfg   Config
	burst int
	srv   Server

	mu   sync.Mutex
	byID map[string]*identityState
	// owner is the identity that opened each session.
	owner map[*mcp.ServerSession]string
}

type identityState struct {
	bucket   *rate.Limiter // nil: no rate limit
	inFlight int
}

// maxIdleIdentities is how many identities are kept before the idle ones
// (a full bucket, nothing in flight) are forgotten.
const maxIdleIdentities = 10000

// New returns the limits of cfg, which Validate accepted, over srv.
func New(cfg Config, srv Server) *PerIdentity {
	burst := cfg.Burst
	if burst == 0 {
		burst = max(1, int(math.Ceil(cfg.RequestsPerSecond)))
	}
	if srv.Logger == nil {
		srv.Logger = slog.New(slog.DiscardHandler)
	}
	if srv.Uncounted == nil {
		srv.Uncounted = func(string) bool { return false }
	}
	return &PerIdentity{cfg: cfg, burst: burst, srv: srv, byID: map[string]*identityState{}, owner: map[*mcp.ServerSession]string{}}
}

// state returns id's state. The caller holds mu.
func (l *PerIdentity) state(id string) *identityState {
	st := l.byID[id]
	if st == nil {
		if len(l.byID) >= maxIdleIdentities {
			l.forgetIdle()
		}
		st = &identityState{}
		if l.cfg.RequestsPerSecond > 0 {
			st.bucket = rate.NewLimiter(rate.Limit(l.cfg.RequestsPerSecond), l.burst)
		}
		l.byID[id] = st
	}
	return st
}

func (l *PerIdentity) forgetIdle() {
	now := time.Now()
	for id, st := range l.byID {
		if st.inFlight == 0 && (st.bucket == nil || st.bucket.TokensAt(now) >= float64(l.burst)) {
			delete(l.byID, id)
		}
	}
}

// Refusal is a request refused by a limit: the message and when to retry.
type Refusal struct {
	Message string
	// RetryAfter is in seconds; 0 when the refusal is no HTTP answer.
	RetryAfter int
}

// takeToken takes a request's token from id's bucket, or says when one is
// there. A message that must pass takes it even from an empty bucket: the
// debt delays the identity's next requests. The caller holds mu.
func (l *PerIdentity) takeToken(st *identityState, mustPass bool) *Refusal {
	if st.bucket == nil {
		return nil
	}
	r := st.bucket.Reserve()
	if d := r.Delay(); d > 0 && !mustPass {
		r.Cancel()
		return l.tooFast(d)
	}
	return nil
}

func (l *PerIdentity) tooFast(wait time.Duration) *Refusal {
	return &Refusal{RetryAfter: max(1, int(math.Ceil(wait.Seconds()))),
		Message: fmt.Sprintf("more than %g requests per second (auth.limits.requestsPerSecond) from this identity; retry in %v", l.cfg.RequestsPerSecond, wait.Round(time.Millisecond))}
}

// Admit decides an HTTP request before go-sdk sees it. A request that
// opens a session (a POST without Mcp-Session-Id: an initialize, a
// discovery, or any request of a stateless gateway) is refused with 429
// and Retry-After when the identity's bucket is empty or, for a stateful
// gateway, when it has as many sessions as it may. The MCP middleware
// takes the request's token and reserves the session's place (two
// initializes racing past this check are decided there). Requests in a
// session are decided there only, where a refusal is an error the
// client's session shows.
func (l *PerIdentity) Admit(r *http.Request, info *auth.TokenInfo) *Refusal {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state(info.UserID)
	if l.cfg.Sessions > 0 && l.openSessions(info.UserID) >= l.cfg.Sessions {
		return l.tooManySessions()
	}
	if st.bucket != nil {
		if tokens := st.bucket.Tokens(); tokens < 1 {
			wait := time.Duration((1 - tokens) / l.cfg.RequestsPerSecond * float64(time.Second))
			return l.tooFast(wait)
		}
	}
	return nil
}

func (l *PerIdentity) tooManySessions() *Refusal {
	return &Refusal{RetryAfter: 10,
		Message: fmt.Sprintf("this identity has %d sessions open, its limit (auth.limits.sessions); end one (DELETE) or retry later", l.cfg.Sessions)}
}

// openSessions counts id's sessions that are still open (initialized, or
// initializing), and forgets the closed ones. The caller holds mu.
func (l *PerIdentity) openSessions(id string) int {
	live := map[*mcp.ServerSession]bool{}
	if l.srv.Sessions != nil {
		for ss := range l.srv.Sessions() {
			live[ss] = true
		}
	}
	n := 0
	for ss, owner := range l.owner {
		switch {
		case !live[ss]:
			delete(l.owner, ss)
		case owner == id:
			n++
		}
	}
	return n
}

// mustPass are the notifications that dropping would harm rather than
// relieve: a cancel ends work, and a session's first initialized
// completes a handshake its initialize was admitted for (a repeated one
// only fills the log). They are counted all the same.
func (l *PerIdentity) mustPass(method string, ss *mcp.ServerSession) bool {
	switch method {
	case "notifications/cancelled":
		return true
	case "notifications/initialized":
		return ss != nil && (l.srv.Initialized == nil || !l.srv.Initialized(ss))
	}
	return false
}

// Middleware counts each identity's requests: a token from its bucket
// for every message (initialize, discovery, ping and notifications
// included), and a place among its calls in flight for each but those
// uncounted; an initialize reserves a place among its sessions. A
// tools/call past a limit is a tool error saying which; another request
// a JSON-RPC error; a notification is dropped, as it has no answer to
// carry the refusal. A request without token information (stdio) passes.
func (l *PerIdentity) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		extra := req.GetExtra()
		if extra == nil || extra.TokenInfo == nil {
			return next(ctx, method, req)
		}
		id := extra.TokenInfo.UserID
		counted := !l.srv.Uncounted(method)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		owned := method == "initialize" && l.cfg.Sessions > 0 && ss != nil && ss.ID() != ""
		l.mu.Lock()
		st := l.state(id)
		var ref *Refusal
		switch {
		case counted && l.cfg.CallsInFlight > 0 && st.inFlight >= l.cfg.CallsInFlight:
			ref = &Refusal{Message: fmt.Sprintf("this identity has %d requests in flight, its limit (auth.limits.callsInFlight); wait for one to end and retry", l.cfg.CallsInFlight)}
		case owned && l.openSessions(id) >= l.cfg.Sessions:
			ref = l.tooManySessions()
		default:
			ref = l.takeToken(st, l.mustPass(method, ss))
		}
		switch {
		case ref != nil:
		case counted:
			st.inFlight++
		case owned:
			l.owner[ss] = id
		}
		l.mu.Unlock()
		if ref != nil {
			return l.refuse(method, ref)
		}
		if !counted {
			res, err := next(ctx, method, req)
			if owned && err != nil {
				l.mu.Lock()
				delete(l.owner, ss)
				l.mu.Unlock()
			}
			return res, err
		}
		defer func() {
			l.mu.Lock()
			st.inFlight--
			l.mu.Unlock()
		}()
		return next(ctx, method, req)
	}
}

// refuse answers a request refused by ref the way its method can carry.
func (l *PerIdentity) refuse(method string, ref *Refusal) (mcp.Result, error) {
	switch {
	case strings.HasPrefix(method, "notifications/"):
		l.srv.Logger.Debug("gateway: notification dropped: its identity is past its limit", "method", method, "why", ref.Message)
		return nil, nil
	case method == "tools/call":
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + ref.Message}}}, nil
	}
	return nil, &jsonrpc.Error{Code: l.srv.BusyCode, Message: ref.Message}
}
