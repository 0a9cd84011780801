package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Teardown bounds for a stdio server: after stdin is closed the child gets
// terminateGrace to exit, then SIGTERM and terminateGrace more, then
// SIGKILL. go-sdk's default is 5s per step, which would make a reload wait
// on a server that ignores stdin EOF.
const (
	terminateGrace = time.Second
	// pipeDrainDelay bounds the wait for the child's stderr to drain once it
	// has exited (a grandchild may hold the pipe open).
	pipeDrainDelay = time.Second
	// maxStderrLine caps one logged stderr line.
	maxStderrLine = 8 << 10
)

// transportFactory returns a fresh transport for one connection attempt.
// Tests replace it to hand out in-memory transports and count attempts.
type transportFactory func() mcp.Transport

// Values of the inheritEnv key: what a stdio child inherits of the host's
// environment (an entry's own env is passed in every mode).
const (
	// InheritScrub passes the host's environment minus what looks like a
	// secret (scrubbed).
	InheritScrub = "scrub"
	// InheritMinimal passes only what a program needs to run
	// (minimalEnv).
	InheritMinimal = "minimal"
	// InheritAll passes the host's whole environment.
	InheritAll = "all"
)

// secretWords are the name fragments that mark a variable as a secret, in
// upper case, matched anywhere in the upper-cased name. WEBHOOK is there
// because a webhook URL is itself the credential (anyone holding it may
// post). AUTH is matched apart (secretName) so that GIT_AUTHOR_NAME passes.
var secretWords = []string{"KEY", "PASS", "SECRET", "TOKEN", "CREDENTIAL", "COOKIE", "SESSION", "PRIVATE", "WEBHOOK"}

// secretName reports whether an ambient variable's name marks it as a
// secret: it contains one of secretWords or AUTH (except within the word
// AUTHOR, as in GIT_AUTHOR_NAME), has PAT as a word of its own (GH_PAT, not
// PATH), or starts with DSH_ (the host's own settings).
func secretName(name string) bool {
	upper := strings.ToUpper(name)
	if strings.HasPrefix(upper, "DSH_") {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	words := strings.FieldsFunc(upper, func(r rune) bool { return (r < 'A' || r > 'Z') && (r < '0' || r > '9') })
	for _, w := range words {
		if w == "PAT" || (strings.Contains(w, "AUTH") && w != "AUTHOR" && w != "AUTHORS") {
			return true
		}
	}
	return false
}

// secretValue reports whether a value is a URL that carries a credential:
// a password in its userinfo (postgres://u:pw@host/db), or a query
// parameter whose name marks a secret (https://host/?api_key=...).
func secretValue(value string) bool {
	value = strings.TrimSpace(value)
	_, rest, ok := strings.Cut(value, "://")
	if !ok {
		return false
	}
	u, err := url.Parse(value)
	if err != nil {
		// Generated passwords often hold what net/url refuses (%, #, /,
		// ^, a space): judge such a URL by its text, user:...@ before
		// the first @. Dropping a URL that is merely malformed costs
		// little.
		at := strings.IndexByte(rest, '@')
		return at >= 0 && strings.Contains(rest[:at], ":")
	}
	// Before any check of the host: a socket DSN
	// (postgres://u:pw@/db?host=/run/pg) has none.
	if _, ok := u.User.Password(); ok {
		return true
	}
	if u.Host == "" {
		return false
	}
	for k := range u.Query() {
		if secretName(k) {
			return true
		}
	}
	return false
}

// minimalNames are the variables InheritMinimal passes, besides LC_*: path,
// home, user, shell, locale, terminal, temporary directory and time zone,
// and their Windows counterparts.
var minimalNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ",
	"SystemRoot", "ComSpec", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA",
	"TEMP", "TMP", "HOMEDRIVE", "HOMEPATH", "USERNAME", "windir",
}

// minimalName reports whether InheritMinimal passes name. fold compares
// without case, as Windows does (Path is PATH there).
func minimalName(name string, fold bool) bool {
	if strings.HasPrefix(name, "LC_") || (fold && strings.HasPrefix(strings.ToUpper(name), "LC_")) {
		return true
	}
	for _, m := range minimalNames {
		if name == m || (fold && strings.EqualFold(name, m)) {
			return true
		}
	}
	return false
}

// childEnv returns the environment of a stdio server: what mode keeps of
// ambient, then extra on top, so explicit entries always win. The result is sorted for reproducibility.
func childEnv(ambient []string, extra map[string]string, mode string) []string {
	fold := runtime.GOOS == "windows"
	env := make(map[string]string, len(ambient)+len(extra))
	for _, kv := range ambient {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		switch mode {
		case InheritAll:
		case InheritMinimal:
			if !minimalName(name, fold) {
				continue
			}
		default:
			if secretName(name) || secretValue(value) {
				continue
			}
		}
		env[name] = value
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// stdioTransport starts the configured command for each connection.
type stdioTransport struct {
	cfg    *Config
	logger *slog.Logger
	// environ is the environment the server starts from, before
	// inheritEnv and env: the instance scope's Environ, which leaves out
	// the variables the composition names as secret. Nil means
	// os.Environ.
	environ func() []string

	// proc is the process Connect started, for explainStart.
	proc *process
}

// process is one started server: its exit, once it happened.
type process struct {
	cmd    *exec.Cmd
	stderr *lineLogger
	exited chan struct{} // closed once cmd.Wait returned
	err    error         // cmd.Wait's, set before exited closes
	stdout *jsonLines
	// hostStopped is set when the host began stopping the server while
	// its stdout was still open: an exit after that is the host's doing.
	hostStopped atomic.Bool
	stopOnce    sync.Once
}

// stopping records that the host is about to stop the process: whether
// the server had ended its stdout (or exited) before that.
func (p *process) stopping() {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		if !p.stdout.ended.Load() {
			p.hostStopped.Store(true)
		}
	})
}

// Connect implements mcp.Transport. The child's stdout reaches go-sdk
// through jsonLines, which skips (and logs) lines that are not JSON-RPC
// messages: a banner such as "Memory server starting..." would otherwise
// end the connection.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := exec.Command(t.cfg.Command, t.cfg.Args...)
	environ := os.Environ
	if t.environ != nil {
		environ = t.environ
	}
	cmd.Env = childEnv(environ(), t.cfg.Env, t.cfg.InheritEnv)
	cmd.Dir = t.cfg.Cwd
	stderr := &lineLogger{logger: t.logger}
	cmd.Stderr = stderr
	cmd.WaitDelay = pipeDrainDelay
	ownProcessGroup(cmd)
	// Pipes of our own rather than cmd's: Wait then reaps the child as
	// soon as it exits (its status explains a failed start) without
	// closing the stdout go-sdk may still be reading.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", t.cfg.Command, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start %q: %w", t.cfg.Command, err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	// The fork happens on a thread that lives as long as the child, so
	// that its parent-death signal means the host's death only.
	release, err := onOwnThread(cmd.Start)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %q: %w", t.cfg.Command, err)
	}
	p := &process{cmd: cmd, stderr: stderr, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.proc = p
	stdout := &jsonLines{r: outR, logger: t.logger}
	p.stdout = stdout
	conn, err := (&mcp.IOTransport{Reader: io.NopCloser(stdout), Writer: &stdinCloser{w: inW, p: p}}).Connect(ctx)
	if err != nil { // IOTransport never fails; be safe anyway
		inW.Close()
		killProcessGroup(cmd)
		<-p.exited
		outR.Close()
		release()
		return nil, err
	}
	return &stdioConn{Connection: conn, p: p, stdout: outR, release: release}, nil
}

// stdinCloser is the child's stdin; closing it ends the child the way the
// MCP stdio transport asks: close stdin, wait terminateGrace for the
// exit, then SIGTERM, then SIGKILL (what go-sdk's CommandTransport does,
// which cannot be used with a filtered stdout).
type stdinCloser struct {
	w    *os.File
	p    *process
	once sync.Once
	err  error
}

func (s *stdinCloser) Write(b []byte) (int, error) { return s.w.Write(b) }

func (s *stdinCloser) Close() error {
	s.once.Do(func() {
		s.p.stopping()
		s.w.Close()
		if s.p.waitExit(terminateGrace) {
			return
		}
		if err := s.p.cmd.Process.Signal(syscall.SIGTERM); err == nil && s.p.waitExit(terminateGrace) {
			return
		}
		s.p.cmd.Process.Kill()
		if !s.p.waitExit(terminateGrace) {
			s.err = errors.New("the server process did not exit after SIGKILL")
		}
	})
	return s.err
}

// waitExit reports whether the process exited within d.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// stdioConn reaps what the child left behind once go-sdk has closed it.
type stdioConn struct {
	mcp.Connection
	p      *process
	stdout *os.File
	// release frees the thread the child was started on (onOwnThread).
	release func()
	once    sync.Once
	err     error
}

// Close closes stdin and waits for the child (SIGTERM, then SIGKILL, each
// after terminateGrace), then kills whatever is left of its process group
// (a wrapper like npx may leave its node child behind) and closes stdout,
// which a left-behind grandchild could otherwise hold open.
func (c *stdioConn) Close() error {
	c.once.Do(func() {
		c.p.stopping()
		c.err = c.Connection.Close()
		killProcessGroup(c.p.cmd)
		c.p.waitExit(pipeDrainDelay + terminateGrace)
		c.stdout.Close()
		c.release()
		c.p.stderr.flush()
	})
	return c.err
}

// jsonLines passes on the lines of a stdio server's stdout that are
// JSON-RPC messages and skips every other line, logging it (cut at
// maxStderrLine): a banner, a "[INFO] starting" log line, a JSON log line
// such as pino's {"level":30,...}; any of them would end the connection in
// go-sdk. A line whose first member is "jsonrpc" passes at once (what
// every SDK writes, and go-sdk's to judge). Any other is judged on at most
// lookAhead bytes: one that ends within them passes if it is a JSON object
// with a "jsonrpc" member, or an array of such (a batch); a longer one
// passes if its first member (of its first element, for a batch) is one a
// JSON-RPC message has (rpcMembers). Blank lines and the blanks
// before a line are dropped: between messages they mean nothing. It holds
// at most lookAhead bytes of a line: the rest of a passed line streams
// through, so go-sdk's frame limit applies to it as before, and of a
// skipped one only what is logged is kept.
type jsonLines struct {
	r      io.Reader
	logger *slog.Logger

	buf     [32 << 10]byte
	pending []byte // read, not yet handed on or judged
	state   lineState
	head    []byte // the start of the line being judged, then of a passed line being handed on
	headOff int    // how much of head is handed on
	headEnd bool   // head holds the whole passed line
	dropped []byte // the start of the line being skipped
	cut     bool   // dropped is cut
	// ended is set once the server's stdout reached its end (or failed):
	// the server, not the host, ended the connection.
	ended atomic.Bool
}

type lineState int

const (
	lineStart    lineState = iota // between lines: blanks are dropped
	lineHead                      // reading a line's start into head, to judge it
	lineHeadPass                  // handing on head, the start of a passed line
	linePass                      // handing on the rest of a passed line
	lineSkip
)

// lookAhead bounds what of a line is held to judge it.
const lookAhead = 64 << 10

// rpcMembers are the members a JSON-RPC message may start with: a line
// longer than lookAhead passes when its first member is one of them.
var rpcMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

func (j *jsonLines) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if n := j.emit(p); n > 0 {
			return n, nil
		}
		n, err := j.r.Read(j.buf[:])
		j.pending = j.buf[:n]
		if n == 0 && err != nil {
			j.ended.Store(true)
			switch j.state {
			case lineSkip:
				j.logSkipped()
				j.state = lineStart
			case lineHead:
				// An unterminated last line: judged whole.
				if j.judgeHead(true); j.state == lineHeadPass {
					continue
				}
			}
			return 0, err
		}
	}
}

// emit hands on what of pending (and head) it can, into p.
func (j *jsonLines) emit(p []byte) int {
	out := 0
	for out < len(p) && (len(j.pending) > 0 || j.state == lineHeadPass) {
		switch j.state {
		case lineStart:
			switch j.pending[0] {
			case ' ', '\t', '\r', '\n':
				j.pending = j.pending[1:]
			case '{', '[':
				j.state = lineHead
			default:
				j.skip(nil)
			}
		case lineHead:
			end := bytes.IndexByte(j.pending, '\n')
			if len(j.head) == 0 && bytes.HasPrefix(j.pending, []byte(`{"jsonrpc"`)) {
				// The usual message: no need to read it twice.
				j.state = linePass
				continue
			}
			if len(j.head) == 0 && end >= 0 && end < lookAhead {
				// The whole line is at hand: judged where it is.
				line := j.pending[:end+1]
				if rpcMessage(line) {
					j.state = linePass
				} else {
					j.pending = j.pending[end+1:]
					j.skip(line)
					j.logSkipped()
					j.state = lineStart
				}
				continue
			}
			take := j.pending
			if end >= 0 {
				take = take[:end+1]
			}
			if room := lookAhead - len(j.head); len(take) > room {
				take = take[:room]
			}
			j.head = append(j.head, take...)
			j.pending = j.pending[len(take):]
			if take[len(take)-1] == '\n' {
				j.judgeHead(true)
			} else if len(j.head) == lookAhead {
				j.judgeHead(false)
			}
		case lineHeadPass:
			n := copy(p[out:], j.head[j.headOff:])
			out += n
			j.headOff += n
			if j.headOff == len(j.head) {
				j.head, j.headOff = j.head[:0], 0
				j.state = linePass
				if j.headEnd {
					j.state = lineStart
				}
			}
		case linePass:
			line := j.pending
			end := bytes.IndexByte(line, '\n')
			if end >= 0 {
				line = line[:end+1]
			}
			n := copy(p[out:], line)
			out += n
			j.pending = j.pending[n:]
			if end >= 0 && n == len(line) {
				j.state = lineStart
			}
		case lineSkip:
			end := bytes.IndexByte(j.pending, '\n')
			chunk := j.pending
			if end >= 0 {
				chunk = chunk[:end]
			}
			if room := max(0, maxStderrLine-len(j.dropped)); len(chunk) > room {
				chunk, j.cut = chunk[:room], true
			}
			j.dropped = append(j.dropped, chunk...)
			if end < 0 {
				j.pending = nil
				continue
			}
			j.pending = j.pending[end+1:]
			j.logSkipped()
			j.state = lineStart
		}
	}
	return out
}

// judgeHead decides on the line whose start is in head: whole tells that
// head holds all of it.
func (j *jsonLines) judgeHead(whole bool) {
	pass := false
	if whole {
		pass = rpcMessage(j.head)
	} else {
		pass = rpcStart(j.head)
	}
	if pass {
		j.state, j.headEnd, j.headOff = lineHeadPass, whole, 0
		return
	}
	j.skip(j.head)
	j.head = j.head[:0]
	if whole {
		j.logSkipped()
		j.state = lineStart
	}
}

// skip starts skipping a line whose start (already read) is start.
func (j *jsonLines) skip(start []byte) {
	start = bytes.TrimRight(start, "\n")
	j.state = lineSkip
	j.cut = len(start) > maxStderrLine
	j.dropped = append(j.dropped[:0], start[:min(len(start), maxStderrLine)]...)
}

// rpcMessage reports whether line (its newline included or not) is a
// JSON-RPC message, or a batch of them.
func rpcMessage(line []byte) bool {
	line = bytes.TrimSpace(line)
	var msg struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
	}
	if len(line) > 0 && line[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(line, &batch) != nil || len(batch) == 0 {
			return false
		}
		for _, m := range batch {
			msg.JSONRPC = nil
			if json.Unmarshal(m, &msg) != nil || msg.JSONRPC == nil {
				return false
			}
		}
		return true
	}
	return json.Unmarshal(line, &msg) == nil && msg.JSONRPC != nil
}

// rpcStart reports whether the start of a line too long to judge whole
// looks like a JSON-RPC message: its first member is one of rpcMembers.
func rpcStart(head []byte) bool {
	b := bytes.TrimLeft(head, " \t\r")
	if len(b) > 0 && b[0] == '[' {
		b = bytes.TrimLeft(b[1:], " \t\r")
	}
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r")
	if len(b) == 0 || b[0] != '"' {
		return false
	}
	name, _, ok := bytes.Cut(b[1:], []byte{'"'})
	return ok && slices.Contains(rpcMembers, string(name))
}

func (j *jsonLines) logSkipped() {
	line := string(bytes.TrimRight(j.dropped, "\r"))
	if j.cut {
		line += "…"
	}
	j.logger.Warn("server stdout: skipped a line that is not a JSON-RPC message (servers must log to stderr)", "line", line)
	j.dropped = j.dropped[:0]
	j.cut = false
}

// lineLogger writes a child's stderr to the instance logger, one record per
// line, and keeps the last few lines to explain a failed start.
type lineLogger struct {
	logger *slog.Logger
	mu     sync.Mutex
	buf    []byte
	tail   []string // the last stderrTail lines, each cut at stderrTailLine
}

// What a failed start quotes of the server's stderr.
const (
	stderrTail     = 5
	stderrTailLine = 300
)

// last returns the last lines of stderr, the unfinished one included.
func (l *lineLogger) last() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.tail)
	if rest := strings.TrimSpace(string(l.buf)); rest != "" {
		out = append(out, cutLine(rest))
	}
	if len(out) > stderrTail {
		out = out[len(out)-stderrTail:]
	}
	return out
}

func cutLine(s string) string {
	if len(s) <= stderrTailLine {
		return s
	}
	n := stderrTailLine
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	for len(l.buf) > maxStderrLine {
		l.emit(l.buf[:maxStderrLine])
		l.buf = l.buf[maxStderrLine:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) > maxStderrLine {
		line = line[:maxStderrLine]
	}
	if len(line) == 0 {
		return
	}
	l.logger.Info("server stderr", "line", string(line))
	if len(l.tail) == stderrTail {
		l.tail = append(l.tail[:0], l.tail[1:]...)
	}
	l.tail = append(l.tail, cutLine(string(line)))
}

// headerTransport adds the configured headers to every request, and puts
// back the secrets of the configured URL that go-sdk never sees.
//
// go-sdk is handed the redacted endpoint (redactURL), because net/http
// quotes a request's URL, query included, in every error it returns, and
// those errors reach the log and the instance's status. Here, below the
// http.Client, a request for that endpoint gets the real query back, and a
// request to the endpoint's host gets the basic auth of the real userinfo
// (unless a configured Authorization header wins, as net/http would have
// it).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	// shown and real are the endpoint as go-sdk has it and as configured;
	// nil when the URL has nothing to hide.
	shown, real *url.URL
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 && t.real == nil {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	if t.real != nil && req.URL.Host == t.shown.Host {
		if req.URL.Scheme == t.shown.Scheme && req.URL.Path == t.shown.Path && req.URL.RawQuery == t.shown.RawQuery {
			req.URL.RawQuery = t.real.RawQuery
		}
		if u := t.real.User; u != nil {
			// Replaces what net/http derived from the redacted userinfo.
			req.URL.User = nil
			password, _ := u.Password()
			req.SetBasicAuth(u.Username(), password)
		}
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// newHTTPClient returns the instance's own HTTP client for endpoint (its
// idle connections are closed at dispose, so none outlive the instance),
// and the endpoint to hand go-sdk: endpoint redacted (redactURL).
func newHTTPClient(endpoint string, headers map[string]string) (*http.Client, *http.Transport, string) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	// go-sdk posts every call on a request of its own, so concurrent calls
	// hold as many connections. net/http keeps 2 idle per host by default:
	// past 2 calls at once, every answer closed its connection and the next
	// call dialled a new one (9% of a gateway's CPU under 32 clients).
	base.MaxIdleConnsPerHost = maxIdleConnsPerServer
	ht := &headerTransport{base: base, headers: headers}
	shown := redactURL(endpoint)
	if shown != endpoint {
		real, err1 := url.Parse(endpoint)
		redacted, err2 := url.Parse(shown)
		if err1 == nil && err2 == nil {
			ht.shown, ht.real = redacted, real
		} else {
			shown = endpoint // Validate refuses such a URL; never reached
		}
	}
	return &http.Client{Transport: ht}, base, shown
}

// maxIdleConnsPerServer is how many idle connections to a Streamable HTTP
// server an instance keeps for the calls to come.
const maxIdleConnsPerServer = 64

// newTransportFactory returns the factory for cfg's transport, and a cleanup
// to run once the instance is done with it.
func newTransportFactory(cfg *Config, logger *slog.Logger, environ func() []string) (transportFactory, func()) {
	switch cfg.Transport {
	case TransportStreamableHTTP:
		client, base, endpoint := newHTTPClient(cfg.URL, cfg.Headers)
		return func() mcp.Transport {
			// A client per attempt over the shared connections, to see
			// how the attempt's first POST was answered (explainStart).
			first := &http.Client{Transport: &firstPOST{base: client.Transport}}
			return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: first}
		}, base.CloseIdleConnections
	case TransportSSE:
		client, base, endpoint := newHTTPClient(cfg.URL, cfg.Headers)
		return func() mcp.Transport {
			return &sseTransport{mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: client}}
		}, base.CloseIdleConnections
	default:
		return func() mcp.Transport {
			return &stdioTransport{cfg: cfg, logger: logger, environ: environ}
		}, func() {}
	}
}

// sseTransport is go-sdk's legacy SSE client with a stream that outlives
// Connect's context: go-sdk ties the GET stream, for the connection's
// whole life, to the context given to Connect, which here is only the
// attempt's (startupTimeoutMs). The stream ends when the connection is
// closed, or when ctx ends before Connect returned.
type sseTransport struct {
	mcp.SSEClientTransport
}

func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.SSEClientTransport.Connect(life)
	if !stop() && err == nil {
		// ctx ended while connecting: the stream is being torn down.
		conn.Close()
		err = context.Cause(ctx)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &sseConn{Connection: conn, cancel: cancel}, nil
}

type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

// firstPOST remembers the status of the first POST's answer: a Streamable
// HTTP endpoint that answers 404 or 405 to it may be a legacy HTTP+SSE
// server.
type firstPOST struct {
	base   http.RoundTripper
	status atomic.Int32
}

func (f *firstPOST) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		f.status.CompareAndSwap(0, int32(resp.StatusCode))
	}
	return resp, err
}

// startError is a failed connection attempt with what explains it.
type startError struct {
	why string
	err error
}

func (e *startError) Error() string { return e.why + " (" + e.err.Error() + ")" }
func (e *startError) Unwrap() error { return e.err }

// explainStart adds to the error of a failed connect what the transport
// knows of the cause: for a stdio server that exited, its exit status and
// last stderr lines (go-sdk says only "client is closing: EOF"); for one
// the host stopped when the attempt ran out of time (go-sdk closes the
// connection of a failed initialize), that, and its last stderr lines; for a
// Streamable HTTP endpoint that answered the first POST with 404 or 405,
// the hint that it may speak the legacy HTTP+SSE transport.
func explainStart(ctx context.Context, tr mcp.Transport, err error) error {
	switch t := tr.(type) {
	case *stdioTransport:
		p := t.proc
		if p == nil {
			return err // it did not start: the error says why
		}
		if p.hostStopped.Load() {
			if ctx.Err() == nil {
				// A write to a server that just died can fail before
				// the read sees its end, and then the host seems to
				// have stopped it. An exit code of its own (not the 0
				// of a closed stdin, nor the host's signal) tells.
				if p.waitExit(pipeDrainDelay) && ownExit(p.err) {
					return &startError{why: "the server process exited (" + exitStatus(p.err) + ") before completing the MCP handshake" + quoteStderr(p), err: err}
				}
				return err // stopped for what err says
			}
			return &startError{why: "no MCP handshake in time, so the host stopped the server" + quoteStderr(p), err: err}
		}
		exited := false
		if ctx.Err() == nil {
			// The server closed its stdout; its exit is normally a
			// moment away.
			exited = p.waitExit(pipeDrainDelay)
		} else {
			select {
			case <-p.exited:
				exited = true
			default:
			}
		}
		if !exited {
			return err
		}
		why := "the server process exited (" + exitStatus(p.err) + ") before completing the MCP handshake" + quoteStderr(p)
		return &startError{why: why, err: err}
	case *mcp.StreamableClientTransport:
		if t.HTTPClient == nil {
			return err
		}
		f, ok := t.HTTPClient.Transport.(*firstPOST)
		if !ok {
			return err
		}
		if st := int(f.status.Load()); st == http.StatusNotFound || st == http.StatusMethodNotAllowed {
			return &startError{why: fmt.Sprintf("the server answered %d %s to the first POST: it may speak only the legacy HTTP+SSE transport; "+
				"if so, set transport: sse (with the URL of its SSE endpoint, often .../sse)", st, http.StatusText(st)), err: err}
		}
	}
	return err
}

// quoteStderr quotes the last lines p wrote to stderr, for a failed start.
func quoteStderr(p *process) string {
	if lines := p.stderr.last(); len(lines) > 0 {
		return "; its last stderr lines: " + strings.Join(lines, " | ")
	}
	return "; it wrote nothing to stderr"
}

// exitStatus words how a process ended.
// ownExit reports whether a process ended with an exit code of its own,
// rather than exit 0 or a signal.
func ownExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() > 0
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	return err.Error()
}

// redactURL hides the secrets a URL may carry: the password of its
// userinfo (u:***@; the whole userinfo when it has no password, since a
// lone user is often a token, as in https://TOKEN@host), and every query
// value (?token=***). It works on the text, so that a URL that does not
// parse is redacted too.
func redactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	if _, err := url.Parse(s); err != nil {
		// A password holding / ? or # ends the authority early on the
		// text (and is why net/url refuses it): hide all up to the last
		// @. Only an unparsable URL, which is never sent, gets this.
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if user, _, ok := strings.Cut(rest[:at], ":"); ok && !strings.ContainsAny(user, "/?#") {
				rest = user + ":***" + rest[at:]
			} else {
				rest = "***" + rest[at:]
			}
		}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, _, hasPassword := strings.Cut(authority[:at], ":")
		if hasPassword {
			authority = user + ":***" + authority[at:]
		} else {
			authority = "***" + authority[at:]
		}
	}
	fragment := ""
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		tail, fragment = tail[:i], tail[i:]
	}
	if path, query, ok := strings.Cut(tail, "?"); ok && query != "" {
		params := strings.Split(query, "&")
		for i, p := range params {
			if k, _, ok := strings.Cut(p, "="); ok {
				params[i] = k + "=***"
			} else if p != "" {
				params[i] = "***"
			}
		}
		tail = path + "?" + strings.Join(params, "&")
	}
	return scheme + "://" + authority + tail + fragment
}
