package control

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
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
	// question bounds how long a question of a call waits for its
	// caller's answer before it is declined (app.QuestionWait).
	question time.Duration
	// streamWrite bounds the writing of one line of a streamed answer
	// to a caller that does not read (streamWriteWait).
	streamWrite time.Duration
	// refuseEvery is the shortest time between two log lines of
	// connections refused past conns.
	refuseEvery time.Duration
}

func defaultLimits() limits {
	return limits{conns: 64, body: 4 << 20, readHeader: 10 * time.Second, readBody: 30 * time.Second, idle: 60 * time.Second, question: app.QuestionWait(), streamWrite: streamWriteWait, refuseEvery: refuseEvery}
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
// answers the others with why they are refused (refuser).
type capListener struct {
	net.Listener
	slots   chan struct{}
	refused *rateLog
	refuse  *refuser
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
			l.refuse.refuse(c, fmt.Sprintf("the running host (pid %d) has %d connections open on its control socket, the most it takes: try again once some have closed", os.Getpid(), cap(l.slots)))
			l.refused.Add()
		}
	}
}

// refuser answers a refused connection's first request with a 503 saying
// why, {"error": why, "refused": true}, so that the command line can tell
// the user that a host runs and refused it, rather than take it for no
// host. Each answer is bounded in time (refuseTimeout), and at most
// cap(busy) are given at once: past that a connection is closed
// unanswered, so a flood costs at most that many goroutines.
type refuser struct {
	busy chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // being answered
	stopped bool
}

func newRefuser() *refuser { return &refuser{busy: make(chan struct{}, 8)} }

// refuseTimeout bounds one refusal's reading and writing.
const refuseTimeout = 2 * time.Second

func (r *refuser) refuse(c net.Conn, why string) {
	select {
	case r.busy <- struct{}{}:
	default:
		c.Close()
		return
	}
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		<-r.busy
		c.Close()
		return
	}
	if r.conns == nil {
		r.conns = map[net.Conn]struct{}{}
	}
	r.conns[c] = struct{}{}
	r.mu.Unlock()
	r.wg.Go(func() {
		defer func() { <-r.busy }()
		defer func() {
			r.mu.Lock()
			delete(r.conns, c)
			r.mu.Unlock()
			c.Close()
		}()
		c.SetDeadline(time.Now().Add(refuseTimeout))
		// The request is read first: a Unix socket closed with data
		// unread resets its peer, which may then lose the answer.
		if req, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c, 64<<10))); err == nil {
			io.Copy(io.Discard, req.Body)
		}
		body, _ := json.Marshal(errorBody{Error: why, Refused: true})
		fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	})
}

// stop cuts the refusals being answered, so that a host stopping does
// not wait on a client that sends nothing, and waits for them to end.
func (r *refuser) stop() {
	r.mu.Lock()
	r.stopped = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
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
