package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/sandbox"
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

// Transport starts a stdio MCP server: one process per Connect, so a
// Transport serves one connection attempt.
type Transport struct {
	Command string
	Args    []string
	// Env is set on top of what Inherit keeps of the ambient environment.
	Env map[string]string
	// Dir is the working directory; "" is the host's.
	Dir string
	// Inherit is InheritScrub (the default for ""), InheritMinimal or
	// InheritAll.
	Inherit string
	// Logger gets the server's stderr and the stdout lines skipped.
	Logger *slog.Logger
	// Environ is the environment the server starts from, before Inherit
	// and Env: the instance scope's Environ, which leaves out the
	// variables the composition names as secret. Nil means os.Environ.
	Environ func() []string
	// Sandbox is what the server may do (package sandbox); the zero
	// value is sandbox.DefaultMode with nothing beyond the defaults.
	Sandbox sandbox.Config
	// Roots are the directories the server may work in: the sandbox
	// grants them for reading and writing.
	Roots []string

	// proc is the process Connect started, for Explain.
	proc *process
	// stderr is its stderr's logger, for StderrTail.
	stderr atomic.Pointer[lineLogger]
	// report says what the sandbox enforces for the last start, or why
	// nothing (sandbox.Launch.Report).
	report atomic.Pointer[string]
}

// SandboxReport says what the sandbox enforces for the server Connect
// started ("sandboxed (landlock v7): read 12 paths, write 3, connect
// none, bind none"), or why it runs unsandboxed; "" before a start.
func (t *Transport) SandboxReport() string {
	if r := t.report.Load(); r != nil {
		return *r
	}
	return ""
}

// StderrTail returns the last lines the server Connect started wrote to
// stderr (none before a start).
func (t *Transport) StderrTail() []string {
	if l := t.stderr.Load(); l != nil {
		return l.last()
	}
	return nil
}

// process is one started server: its exit, once it happened.
type process struct {
	cmd    *exec.Cmd
	stderr *lineLogger
	exited chan struct{} // closed once cmd.Wait returned
	err    error         // cmd.Wait's, set before exited closes
	stdout *jsonLines
	// sandboxed is set when the server runs in the sandbox, which may
	// then be why it failed.
	sandboxed bool
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
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := t.command()
	stderr := &lineLogger{logger: t.Logger}
	cmd.Stderr = stderr
	t.stderr.Store(stderr)
	cmd.WaitDelay = pipeDrainDelay
	ownProcessGroup(cmd)
	prep, err := sandbox.Prepare(ctx, cmd, t.Sandbox)
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", t.Command, err)
	}
	launch, err := sandbox.Start(cmd, t.Sandbox, t.Roots)
	if err != nil {
		prep.Cleanup()
		return nil, fmt.Errorf("start %q: %w", t.Command, err)
	}
	launch.After(prep.Cleanup)
	t.logPrepared(prep)
	t.logLaunch(launch)
	t.report.Store(&launch.Report)
	stderr.sandboxed = launch.Sandboxed
	// Pipes of our own rather than cmd's: Wait then reaps the child as
	// soon as it exits (its status explains a failed start) without
	// closing the stdout go-sdk may still be reading.
	inR, inW, err := os.Pipe()
	if err != nil {
		launch.Cleanup()
		return nil, fmt.Errorf("start %q: %w", t.Command, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		launch.Cleanup()
		return nil, fmt.Errorf("start %q: %w", t.Command, err)
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
		launch.Cleanup()
		return nil, fmt.Errorf("start %q: %w", t.Command, err)
	}
	p := &process{cmd: cmd, stderr: stderr, exited: make(chan struct{}), sandboxed: launch.Sandboxed}
	go func() {
		p.err = cmd.Wait()
		launch.Cleanup()
		close(p.exited)
	}()
	t.proc = p
	stdout := &jsonLines{r: outR, logger: t.Logger}
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

// command is the server's command, its environment and directory set.
func (t *Transport) command() *exec.Cmd {
	name := t.Command
	// A path such as ./bin/server is the directory's, as a shell started
	// there would run it (the sandbox's launcher would take it against
	// the host's directory).
	if t.Dir != "" && !filepath.IsAbs(name) && strings.ContainsRune(name, filepath.Separator) {
		name = filepath.Join(t.Dir, name)
	}
	cmd := exec.Command(name, t.Args...)
	environ := os.Environ
	if t.Environ != nil {
		environ = t.Environ
	}
	cmd.Env = Env(environ(), t.Env, t.Inherit)
	cmd.Dir = t.Dir
	return cmd
}

// CheckSandbox runs the sandbox's probes in the sandbox the server would
// start in (sandbox.Check), without starting the server.
func (t *Transport) CheckSandbox(ctx context.Context) (*sandbox.Report, error) {
	return sandbox.Check(ctx, t.command(), t.Sandbox, t.Roots)
}

// warned keeps the sandbox warnings and notes logged, so that each is logged once
// per host process rather than at every start of every server.
var warned sync.Map

// logPrepared logs what was done outside the sandbox before the start.
func (t *Transport) logPrepared(p *sandbox.Prepared) {
	if t.Logger == nil {
		return
	}
	if p.Warning != "" {
		if _, seen := warned.LoadOrStore(p.Warning, true); !seen {
			t.Logger.Warn("sandbox: " + p.Warning)
		}
	}
	if p.Note != "" {
		t.Logger.Debug("sandbox: " + p.Note)
	}
}

// logLaunch logs what the sandbox enforces for the server.
func (t *Transport) logLaunch(l *sandbox.Launch) {
	if t.Logger == nil {
		return
	}
	warnOnce := func(msg string) {
		if _, seen := warned.LoadOrStore(msg, true); !seen {
			t.Logger.Warn(msg)
		}
	}
	if l.Warning != "" {
		warnOnce(l.Warning)
		return
	}
	if l.Sandboxed {
		// Once per start: the server's grants, where a permission
		// error in its log is read.
		t.Logger.Info(l.Report)
		// A server restarted in a crash loop states the same facts again.
		for _, n := range l.Notes {
			warnOnce("sandbox: " + n)
		}
	}
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

// Explain adds to err, the error of a failed connect over t, what the
// process tells of the cause: for a server that exited, its exit status
// and last stderr lines (go-sdk says only "client is closing: EOF"); for
// one the host stopped when the attempt ran out of time (go-sdk closes the
// connection of a failed initialize), that, and its last stderr lines.
func (t *Transport) Explain(ctx context.Context, err error) error {
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
				return explained("the server process exited ("+exitStatus(p.err)+") before completing the MCP handshake"+quoteStderr(p)+sandboxHint(p), err)
			}
			return err // stopped for what err says
		}
		return explained("no MCP handshake in time, so the host stopped the server"+quoteStderr(p), err)
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
	return explained("the server process exited ("+exitStatus(p.err)+") before completing the MCP handshake"+quoteStderr(p)+sandboxHint(p), err)
}

// sandboxHint says, for a sandboxed server that exited, that the sandbox
// may be why, and which keys widen it.
func sandboxHint(p *process) string {
	if !p.sandboxed {
		return ""
	}
	if path := p.stderr.refused(); path != "" {
		// Name the grant: the directory of a file, or the directory.
		dir := path
		if st, err := os.Stat(path); err != nil || !st.IsDir() {
			dir = filepath.Dir(path)
		}
		return fmt.Sprintf("; it ran in the sandbox, which refused %s: grant it with sandbox.read: [%s] (sandbox.write to write there), or set sandbox.mode: off (docs/sandbox.md)", path, dir)
	}
	return "; it ran in the sandbox, which may be the cause if it needs files or ports beyond its grants: " + sandboxWiden
}

// explained is err with why in front, still matching err.
func explained(why string, err error) error { return fmt.Errorf("%s (%w)", why, err) }

// quoteStderr quotes the last lines p wrote to stderr, for a failed start.
func quoteStderr(p *process) string {
	if lines := p.stderr.last(); len(lines) > 0 {
		return "; its last stderr lines: " + strings.Join(lines, " | ")
	}
	return "; it wrote nothing to stderr"
}

// ownExit reports whether a process ended with an exit code of its own,
// rather than exit 0 or a signal.
func ownExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() > 0
}

// exitStatus words how a process ended.
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
