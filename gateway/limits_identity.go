package gateway

// Limits per identity: with inbound OAuth, each subject (and the static
// token's holder) has its own request rate, calls in flight and sessions,
// so that one caller exhausting its share leaves the others theirs. The
// gateway-wide caps (Limits) still bound the sum.

import (
	"context"
	"fmt"
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

// IdentityLimits are the auth block's limits, each per identity (a token's
// subject, or the static token's holder). Zero means no limit.
type IdentityLimits struct {
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

func (l *IdentityLimits) validate() error {
	switch {
	case l.RequestsPerSecond < 0 || math.IsNaN(l.RequestsPerSecond) || math.IsInf(l.RequestsPerSecond, 0):
		return host.KeyErrorf("auth.limits.requestsPerSecond", "%v: want a positive number, or leave it out for no limit", l.RequestsPerSecond)
	case l.Burst < 0:
		return host.KeyErrorf("auth.limits.burst", "%d is negative", l.Burst)
	case l.Burst > 0 && l.RequestsPerSecond == 0:
		return host.KeyErrorf("auth.limits.burst", "applies to requestsPerSecond, which is not set")
	case l.CallsInFlight < 0:
		return host.KeyErrorf("auth.limits.callsInFlight", "%d is negative; leave it out for no limit", l.CallsInFlight)
	case l.Sessions < 0:
		return host.KeyErrorf("auth.limits.sessions", "%d is negative; leave it out for no limit", l.Sessions)
	}
	return nil
}

// identityLimits keeps each identity's state.
type identityLimits struct {
	cfg   IdentityLimits
	burst int

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

func newIdentityLimits(cfg IdentityLimits) *identityLimits {
	burst := cfg.Burst
	if burst == 0 {
		burst = max(1, int(math.Ceil(cfg.RequestsPerSecond)))
	}
	return &identityLimits{cfg: cfg, burst: burst, byID: map[string]*identityState{}, owner: map[*mcp.ServerSession]string{}}
}

// state returns id's state. The caller holds mu.
func (l *identityLimits) state(id string) *identityState {
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

func (l *identityLimits) forgetIdle() {
	now := time.Now()
	for id, st := range l.byID {
		if st.inFlight == 0 && (st.bucket == nil || st.bucket.TokensAt(now) >= float64(l.burst)) {
			delete(l.byID, id)
		}
	}
}

// refusal is a request refused by a limit: the message and when to retry.
type refusal struct {
	msg        string
	retryAfter int // seconds
}

// takeToken takes a request's token from id's bucket, or says when one is
// there. A message that must pass takes it even from an empty bucket: the
// debt delays the identity's next requests. The caller holds mu.
func (l *identityLimits) takeToken(st *identityState, mustPass bool) *refusal {
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

func (l *identityLimits) tooFast(wait time.Duration) *refusal {
	return &refusal{retryAfter: max(1, int(math.Ceil(wait.Seconds()))),
		msg: fmt.Sprintf("more than %g requests per second (auth.limits.requestsPerSecond) from this identity; retry in %v", l.cfg.RequestsPerSecond, wait.Round(time.Millisecond))}
}

// admit decides an HTTP request before go-sdk sees it. A request that
// opens a session (a POST without Mcp-Session-Id: an initialize, a
// discovery, or any request of a stateless gateway) is refused with 429
// and Retry-After when the identity's bucket is empty or, for a stateful
// gateway, when it has as many sessions as it may. The MCP middleware
// takes the request's token and reserves the session's place (two
// initializes racing past this check are decided there). Requests in a
// session are decided there only, where a refusal is an error the
// client's session shows.
func (l *identityLimits) admit(g *Gateway, r *http.Request, info *auth.TokenInfo) *refusal {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state(info.UserID)
	if l.cfg.Sessions > 0 && l.openSessions(g, info.UserID) >= l.cfg.Sessions {
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

func (l *identityLimits) tooManySessions() *refusal {
	return &refusal{retryAfter: 10,
		msg: fmt.Sprintf("this identity has %d sessions open, its limit (auth.limits.sessions); end one (DELETE) or retry later", l.cfg.Sessions)}
}

// openSessions counts id's sessions that are still open (initialized, or
// initializing), and forgets the closed ones. The caller holds mu.
func (l *identityLimits) openSessions(g *Gateway, id string) int {
	live := map[*mcp.ServerSession]bool{}
	for ss := range g.server.Sessions() {
		live[ss] = true
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
func mustPass(g *Gateway, method string, ss *mcp.ServerSession) bool {
	switch method {
	case "notifications/cancelled":
		return true
	case "notifications/initialized":
		return ss != nil && !g.lists.ready(ss)
	}
	return false
}

// middleware counts each identity's requests: a token from its bucket
// for every message (initialize, discovery, ping and notifications
// included, as README says), and a place among its calls in flight for
// each but those uncounted; an initialize reserves a place among its
// sessions. A tools/call past a limit is a tool error saying which;
// another request a JSON-RPC error; a notification is dropped, as it has
// no answer to carry the refusal.
func (l *identityLimits) middleware(g *Gateway, next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		extra := req.GetExtra()
		initialize := method == "initialize"
		if extra == nil || extra.TokenInfo == nil {
			return next(ctx, method, req)
		}
		id := extra.TokenInfo.UserID
		counted := !uncounted(method)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		owned := initialize && l.cfg.Sessions > 0 && ss != nil && ss.ID() != ""
		l.mu.Lock()
		st := l.state(id)
		var ref *refusal
		switch {
		case counted && l.cfg.CallsInFlight > 0 && st.inFlight >= l.cfg.CallsInFlight:
			ref = &refusal{msg: fmt.Sprintf("this identity has %d requests in flight, its limit (auth.limits.callsInFlight); wait for one to end and retry", l.cfg.CallsInFlight)}
		case owned && l.openSessions(g, id) >= l.cfg.Sessions:
			ref = l.tooManySessions()
		default:
			ref = l.takeToken(st, mustPass(g, method, ss))
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
			if strings.HasPrefix(method, "notifications/") {
				g.logger.Debug("gateway: notification dropped: its identity is past its limit", "method", method, "why", ref.msg)
				return nil, nil
			}
			if method == "tools/call" {
				return errorResult("refused: " + ref.msg), nil
			}
			return nil, &jsonrpc.Error{Code: codeBusy, Message: ref.msg}
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
