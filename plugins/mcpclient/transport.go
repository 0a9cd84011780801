package mcpclient

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

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
}

// Connect implements mcp.Transport.
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
	ct := &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}
	var conn mcp.Connection
	// The fork happens on a thread that lives as long as the child, so
	// that its parent-death signal means the host's death only.
	release, err := onOwnThread(func() (err error) {
		conn, err = ct.Connect(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", t.cfg.Command, err)
	}
	return &stdioConn{Connection: conn, cmd: cmd, stderr: stderr, release: release}, nil
}

// stdioConn reaps what the child left behind once go-sdk has closed it.
type stdioConn struct {
	mcp.Connection
	cmd    *exec.Cmd
	stderr *lineLogger
	// release frees the thread the child was started on (onOwnThread).
	release func()
	once    sync.Once
	err     error
}

// Close closes stdin and waits for the child (SIGTERM, then SIGKILL, each
// after terminateGrace), then kills whatever is left of its process group
// (a wrapper like npx may leave its node child behind).
func (c *stdioConn) Close() error {
	c.once.Do(func() {
		c.err = c.Connection.Close()
		killProcessGroup(c.cmd)
		c.release()
		c.stderr.flush()
	})
	return c.err
}

// lineLogger writes a child's stderr to the instance logger, one record per
// line.
type lineLogger struct {
	logger *slog.Logger
	mu     sync.Mutex
	buf    []byte
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

// newTransportFactory returns the factory for cfg's transport, and a cleanup
// to run once the instance is done with it.
func newTransportFactory(cfg *Config, logger *slog.Logger, environ func() []string) (transportFactory, func()) {
	switch cfg.Transport {
	case TransportStreamableHTTP:
		client, base, endpoint := newHTTPClient(cfg.URL, cfg.Headers)
		return func() mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}
		}, base.CloseIdleConnections
	default:
		return func() mcp.Transport {
			return &stdioTransport{cfg: cfg, logger: logger, environ: environ}
		}, func() {}
	}
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
