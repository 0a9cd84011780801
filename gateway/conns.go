package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// The listener's connection caps: the gateway-wide maxConnections and
// each peer's maxConnectionsPerCaller, with health checks answered past
// them, and the write deadline per chunk that frees a never-read answer.

// maxConnections returns the connection cap for the configured value
// (0: the default) under the descriptor limit nofile (0: unknown): at
// most half of what nofile leaves after fdReserve, and at least 1. why,
// when not empty, says that the configured value was lowered.
func maxConnections(configured int, nofile uint64) (n int, why string) {
	n = configured
	if n <= 0 {
		n = DefaultMaxConnections
	}
	if nofile == 0 {
		return n, ""
	}
	room := 1
	if nofile > fdReserve+2 {
		room = int(min(nofile-fdReserve, 1<<30) / 2)
	}
	if n <= room {
		return n, ""
	}
	if configured > 0 {
		why = fmt.Sprintf("maxConnections %d lowered: the process may open %d descriptors and keeps %d of them for its MCP servers", configured, nofile, fdReserve)
	}
	return room, why
}

// capListener accepts at most max connections open at once. One more is
// answered 503 with a reason and closed, and counted in refused: refusing
// costs a moment and no lasting descriptor, where leaving it in the
// kernel's queue would hold the client in silence.
type capListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused *tally
	// perCaller caps the connections of one peer address, but a trusted
	// proxy's; byAddr counts them (under mu).
	perCaller int
	proxies   proxies
	mu        sync.Mutex
	byAddr    map[netip.Prefix]int
	// health, when set, answers a refused connection's health check
	// (Gateway.health) instead of refusing it.
	health func(path string) (status int, body string, ok bool)
	// counted, when set, counts a refusal by its status (Metrics.refused).
	counted func(status int)
	// refusing bounds the refusals in flight (each holds its descriptor
	// up to refuseTimeout); past it a connection is closed unanswered.
	refusing chan struct{}
	wg       sync.WaitGroup
	// writeTimeout bounds each writeChunk of a write (cappedConn.Write).
	writeTimeout time.Duration
	// writeFailed, when set (by tests), is called when a failed write
	// closed its connection.
	writeFailed func()
}

// refuseTimeout bounds how long a refused connection is held to answer it.
const refuseTimeout = time.Second

func newCapListener(ln net.Listener, max int, refused *tally) *capListener {
	return &capListener{Listener: ln, max: int64(max), refused: refused, refusing: make(chan struct{}, 32), writeTimeout: writeTimeout}
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		a, counted, status, why := l.admit(c)
		if status == 0 {
			return &cappedConn{Conn: c, l: l, addr: a, counted: counted}, nil
		}
		l.refused.Add()
		select {
		case l.refusing <- struct{}{}:
			l.wg.Add(1)
			go l.refuse(c, status, why)
		default:
			l.count(status)
			c.Close()
		}
	}
}

// admit takes c's places (the listener's, and its peer a's unless a is a
// trusted proxy: counted), or returns the status and reason to refuse it
// with.
func (l *capListener) admit(c net.Conn) (a netip.Addr, counted bool, status int, why string) {
	if l.open.Add(1) > l.max {
		l.open.Add(-1)
		return a, false, http.StatusServiceUnavailable, fmt.Sprintf("Service Unavailable: the gateway has %d connections open, its limit (maxConnections); retry later", l.max)
	}
	a = peerAddr(c.RemoteAddr().String())
	counted = l.perCaller > 0 && a.IsValid() && !l.proxies.trusted(a)
	if counted {
		l.mu.Lock()
		if l.byAddr == nil {
			l.byAddr = map[netip.Prefix]int{}
		}
		k := clientKey(a)
		if l.byAddr[k] >= l.perCaller {
			l.mu.Unlock()
			l.open.Add(-1)
			return a, false, http.StatusTooManyRequests, fmt.Sprintf("Too Many Requests: this client (%s) has %d connections open, its share of the gateway's (maxConnectionsPerCaller); close some or retry later", showKey(k), l.perCaller)
		}
		l.byAddr[k]++
		l.mu.Unlock()
	}
	return a, counted, 0, ""
}

// release gives back the places of a connection from a.
func (l *capListener) release(a netip.Addr, counted bool) {
	l.open.Add(-1)
	if !counted {
		return
	}
	k := clientKey(a)
	l.mu.Lock()
	if l.byAddr[k]--; l.byAddr[k] <= 0 {
		delete(l.byAddr, k)
	}
	l.mu.Unlock()
}

// refuse reads c's request head and answers it: a health check (GET
// /healthz or /readyz) as the gateway's health handlers would, anything
// else status with why. It then reads what else the client sent (so that
// closing does not reset the connection before the client has read the
// answer) and closes it.
func (l *capListener) refuse(c net.Conn, status int, why string) {
	defer l.wg.Done()
	defer func() { <-l.refusing }()
	defer c.Close()
	c.SetDeadline(time.Now().Add(refuseTimeout))
	// Bounded: a refused client must not make the gateway read (or
	// hold) much of what it sends.
	br := bufio.NewReaderSize(io.LimitReader(c, 64<<10), 4096)
	body := why + "\n"
	if req, err := http.ReadRequest(br); err == nil && l.health != nil && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
		if hs, hb, ok := l.health(req.URL.Path); ok {
			status, body = hs, hb
		}
	}
	c.SetDeadline(time.Now().Add(refuseTimeout))
	l.count(status)
	retry := ""
	if status != http.StatusOK {
		retry = "Retry-After: 10\r\n"
	}
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\nContent-Length: %d\r\n%sConnection: close\r\n\r\n%s", status, http.StatusText(status), len(body), retry, body)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, br)
}

// count counts a refusal answered (or closed unanswered) with status; a
// health check answered is none.
func (l *capListener) count(status int) {
	if l.counted != nil && status >= 400 {
		l.counted(status)
	}
}

// wait waits for the refusals in flight, after the listener is closed.
func (l *capListener) wait() { l.wg.Wait() }

// cappedConn gives its place back when closed.
type cappedConn struct {
	net.Conn
	l       *capListener
	addr    netip.Addr // the peer's
	counted bool       // in the peer's places
	once    sync.Once
}

func (c *cappedConn) Close() error {
	c.once.Do(func() { c.l.release(c.addr, c.counted) })
	return c.Conn.Close()
}

// Write writes p a writeChunk at a time, each within the write timeout. A
// client that stops reading would otherwise hold its answer in the
// gateway's memory (a 7 MB file read by 20 such clients took 1.7 GB) for
// as long as it kept the connection; now the write fails, the connection
// closes and the answer is freed.
func (c *cappedConn) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), writeChunk)]
		c.Conn.SetWriteDeadline(time.Now().Add(c.l.writeTimeout))
		m, err := c.Conn.Write(chunk)
		n += m
		if err != nil {
			// Closed here: net/http would keep the connection, and the
			// request its answer, until the handler returns, which a
			// stream whose write failed does not do on its own.
			c.Close()
			if c.l.writeFailed != nil {
				c.l.writeFailed()
			}
			return n, err
		}
		p = p[m:]
	}
	return n, nil
}

// CloseWrite half-closes c. net/http does so before closing a connection
// whose request body it left unread (413, or a refusal of a large body),
// so that the client reads the answer and then EOF instead of a reset
// that can discard the answer; the wrapper must not hide it.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
