package hostrun

// A one-shot session: start the composition, wait for it to settle, do
// one thing, shut it down (dsh-host tools, call, prompt, command, chat).

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/logins"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Start is how every subcommand starts a host: it creates one with
// opts, applies c (Load's) and returns once every instance has
// settled (active, failed or pending) or ctx ends. observe, if not nil,
// sees every status change from the first; each setup runs on the
// new host before anything starts.
//
// The host is returned whatever the error, and the caller shuts it down:
// instances still starting when ctx ends go on in the background until
// then. An instance that failed is in Status, not in the error; the error is
// ctx's.
func Start(ctx context.Context, c *host.Composition, opts *host.Options, observe func(host.InstanceStatus), setup ...func(*host.Host)) (*host.Host, error) {
	h := host.New(opts)
	if observe != nil {
		h.OnStatus(observe)
	}
	for _, fn := range setup {
		fn(h)
	}
	return h, h.Update(ctx, c)
}

// OnceOptions say how Once runs its session.
type OnceOptions struct {
	Logger *slog.Logger
	// Wait bounds the wait for every instance to settle; an instance
	// still starting when it ends shows as "starting" in Status.
	Wait time.Duration
	// Answerer, if not nil, answers a server that asks for input meanwhile.
	Answerer elicit.Answerer
	// LoginOut and OpenURL are the browser step of a server's login,
	// which runs in this process (see LoginGate).
	LoginOut io.Writer
	OpenURL  func(ctx context.Context, url string) error
}

// Once starts c, waits up to o.Wait for it to settle, runs fn and shuts
// the host down. A start that fails goes to failed, and Once returns 1;
// so does a shutdown that is not clean after fn returned 0.
func Once(ctx context.Context, c *host.Composition, o OnceOptions, failed func(error), fn func(h *host.Host) int) int {
	gate := AllowLogins(o.LoginOut, o.OpenURL)
	defer gate.Remove()
	startCtx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	h, err := Start(startCtx, c, &host.Options{Logger: o.Logger}, nil, gate.Install)
	if err == nil {
		// A lazy server with no catalog cache is active before its tools
		// came: the command needs them (and its run writes the cache).
		if reg, ok := host.Lookup(h, tools.Key); ok && reg != nil {
			err = reg.WaitStarted(startCtx)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		o.Logger.Warn("instances still starting when --wait ended", "wait", o.Wait)
		err = nil
	}
	code := 1
	if err != nil {
		failed(err)
	} else if ctx.Err() == nil {
		remove := func() {}
		if o.Answerer != nil {
			remove = (&app.Local{Host: h}).InstallAnswerer(o.Answerer)
		}
		code = fn(h)
		remove()
	}
	if !Shutdown(h, o.Logger) && code == 0 {
		code = 1
	}
	return code
}

// LoginGate lets servers' logins run in this process, their messages on
// the command's stderr: the subcommands where a person or a script drives
// the command (run and its console, tools, call, prompt, command), not
// serve, whose servers wait for `dsh-host login`. Install, given to Start,
// puts the browser step on the host's logins service as soon as that
// service runs, before the servers that use it start; Remove takes it off.
type LoginGate struct {
	step   logins.BrowserStep
	mu     sync.Mutex
	undo   []func()
	closed bool
}

// AllowLogins returns a gate whose browser step writes to out and opens
// URLs with open (nil: the default opener).
func AllowLogins(out io.Writer, open func(ctx context.Context, url string) error) *LoginGate {
	return &LoginGate{step: logins.BrowserStep{Out: out, Open: open}}
}

func (g *LoginGate) Install(h *host.Host) {
	try := func() {
		reg, ok := host.Lookup(h, logins.Key)
		if !ok || reg == nil {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.closed {
			g.undo = append(g.undo, reg.AllowBrowser(&g.step))
		}
	}
	// The logins service is a built-in: it runs before the composition's
	// entries, and again after a restart of its instance.
	remove := h.OnStatus(func(st host.InstanceStatus) {
		if st.ID == logins.PluginName && st.State == host.StateActive {
			try()
		}
	})
	g.mu.Lock()
	g.undo = append(g.undo, remove)
	g.mu.Unlock()
}

func (g *LoginGate) Remove() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for i := len(g.undo) - 1; i >= 0; i-- {
		g.undo[i]()
	}
	g.undo = nil
}

// LoginTimeout is how long `dsh-host login` waits for the browser unless
// told otherwise.
const LoginTimeout = logins.DefaultLoginTimeout

// Browser is the browser step of a login run in this process (`dsh-host
// login`): its messages on std's stderr, escaped on a terminal, the URL
// opened with std.OpenURL, the wait bounded by timeout.
func Browser(std console.Stdio, timeout time.Duration) *logins.BrowserStep {
	return &logins.BrowserStep{Out: std.Display().Err, Open: std.OpenURL, Timeout: timeout}
}
