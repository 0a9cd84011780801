package control

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// The socket's limits. Only the host's user can connect, but a stuck or
// runaway client of that user must not take the host down with it: idle
// connections are closed, connections are capped, and a request's body
// is bounded in size and in time, as the gateway's are.
type limits struct {
	// conns caps the connections open at once; one more is closed at
	// once (and counted in the log).
	conns int
	// body caps a request's body, in bytes (413 past it).
	body int64
	// readHeader, readBody and idle bound the sending of a request's
	// headers and body, and an idle connection.
	readHeader, readBody, idle time.Duration
}

func defaultLimits() limits {
	return limits{conns: 64, body: 4 << 20, readHeader: 10 * time.Second, readBody: 30 * time.Second, idle: 60 * time.Second}
}

// rateLog writes a repeated event as one line per interval with the number
// since the last line: the first at once, the next once the interval has
// passed, so that a flood of refusals cannot flood the log.
type rateLog struct {
	every time.Duration
	emit  func(n int)

	mu   sync.Mutex
	last time.Time
	n    int
}

func (r *rateLog) Add() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if now := time.Now(); r.last.IsZero() || now.Sub(r.last) >= r.every {
		r.emit(r.n)
		r.n, r.last = 0, now
	}
}

// refuseEvery is the shortest time between two log lines of refusals.
const refuseEvery = 10 * time.Second

// capListener accepts at most cap(slots) connections open at once and
// closes the others unanswered.
type capListener struct {
	net.Listener
	slots   chan struct{}
	refused *rateLog
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, free: sync.OnceFunc(func() { <-l.slots })}, nil
		default:
			c.Close()
			l.refused.Add()
		}
	}
}

// slotConn gives its place back when closed.
type slotConn struct {
	net.Conn
	free func()
}

func (c *slotConn) Close() error {
	c.free()
	return c.Conn.Close()
}

// bounded gives a request's body lim.body bytes and lim.readBody to
// arrive. net/http lifts the read deadline once the body is read, so a
// long call's answer is not cut.
func bounded(next http.Handler, lim limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(lim.readBody))
			r.Body = http.MaxBytesReader(w, r.Body, lim.body)
		}
		next.ServeHTTP(w, r)
	})
}
