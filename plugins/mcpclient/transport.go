package mcpclient

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
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

// secretEnv matches the ambient variables a stdio child does not inherit.
var secretEnv = regexp.MustCompile(`(?i)KEY|PASSWORD|SECRET|TOKEN`)

// childEnv returns the environment of a stdio server: ambient minus names
// that look like secrets and DSH_* (case-insensitive), then extra on top, so
// explicit entries always win. The result is sorted for reproducibility.
func childEnv(ambient []string, extra map[string]string) []string {
	env := make(map[string]string, len(ambient)+len(extra))
	for _, kv := range ambient {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if secretEnv.MatchString(name) || strings.HasPrefix(strings.ToUpper(name), "DSH_") {
			continue
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
}

// Connect implements mcp.Transport.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := exec.Command(t.cfg.Command, t.cfg.Args...)
	cmd.Env = childEnv(os.Environ(), t.cfg.Env)
	cmd.Dir = t.cfg.Cwd
	stderr := &lineLogger{logger: t.logger}
	cmd.Stderr = stderr
	cmd.WaitDelay = pipeDrainDelay
	ownProcessGroup(cmd)
	ct := &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}
	conn, err := ct.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", t.cfg.Command, err)
	}
	return &stdioConn{Connection: conn, cmd: cmd, stderr: stderr}, nil
}

// stdioConn reaps what the child left behind once go-sdk has closed it.
type stdioConn struct {
	mcp.Connection
	cmd    *exec.Cmd
	stderr *lineLogger
	once   sync.Once
	err    error
}

// Close closes stdin and waits for the child (SIGTERM, then SIGKILL, each
// after terminateGrace), then kills whatever is left of its process group
// (a wrapper like npx may leave its node child behind).
func (c *stdioConn) Close() error {
	c.once.Do(func() {
		c.err = c.Connection.Close()
		killProcessGroup(c.cmd)
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

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// newHTTPClient returns the instance's own HTTP client (its idle connections
// are closed at dispose, so none outlive the instance).
func newHTTPClient(headers map[string]string) (*http.Client, *http.Transport) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: &headerTransport{base: base, headers: headers}}, base
}

// newTransportFactory returns the factory for cfg's transport, and a cleanup
// to run once the instance is done with it.
func newTransportFactory(cfg *Config, logger *slog.Logger) (transportFactory, func()) {
	switch cfg.Transport {
	case TransportStreamableHTTP:
		client, base := newHTTPClient(cfg.Headers)
		return func() mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client}
		}, base.CloseIdleConnections
	default:
		return func() mcp.Transport {
			return &stdioTransport{cfg: cfg, logger: logger}
		}, func() {}
	}
}
