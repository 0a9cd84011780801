package hostrun

// The flags and the session of a one-shot subcommand (tools, call,
// prompt, command, status, resources, read, trust, policy, chat): ask the
// running host of the composition when there is one, else start one of
// its own for the one thing, and shut it down.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/cli"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/services/elicit"
)

// OneShot is the flag set of a subcommand that starts the composition.
type OneShot struct {
	cli.CommonFlags
	Wait time.Duration
	// Elicit is what a server that asks for input during the command
	// gets: "decline" (nobody is here to answer) or "defaults".
	Elicit string
	// NoAttach (--no-attach, RegisterAttach) starts a host of its own
	// even when one runs the composition.
	NoAttach bool
	// Failed, when set, is told why the composition did not start, as
	// well as stderr (chat -p's JSON result).
	Failed func(error)
}

// Register adds the flags every one-shot subcommand takes to fs.
func (o *OneShot) Register(fs *flag.FlagSet) {
	o.CommonFlags.Register(fs, "warn")
	fs.DurationVar(&o.Wait, "wait", 30*time.Second, "how long to wait for every instance to settle (active, failed or pending)")
	o.Elicit = "decline"
	fs.Var(cli.Choice{Value: &o.Elicit, Allowed: []string{"decline", "defaults"}}, "elicit",
		"`answer` to a server that asks for input (elicitation) meanwhile: decline, or defaults to accept its form with the defaults (for scripts)")
}

// RegisterAttach adds --no-attach to fs. Its usage has no backquotes:
// flag help would show the quoted words as a value the flag takes.
func (o *OneShot) RegisterAttach(fs *flag.FlagSet) {
	fs.BoolVar(&o.NoAttach, "no-attach", false, "start a host of its own even when 'dsh-host run' or 'serve' runs this composition (by default the command asks that host)")
}

// Fail prints err prefixed with the subcommand name and returns
// cli.ExitFail. The error may quote a server, so on a terminal it is
// escaped (Display).
func Fail(std console.Stdio, name string, err error) int {
	fmt.Fprintf(std.Display().Err, "dsh-host %s: %v\n", name, err)
	return cli.ExitFail
}

// Logger is NewTermLogger on std's stderr, with std's terminal decision.
func Logger(std console.Stdio, format, level string) *slog.Logger {
	return NewTermLogger(std.Err, format, level, std.IsTerminal(std.Err))
}

// WithHost reads the composition, starts it, waits up to o.Wait for it to
// settle, runs fn and shuts the host down. An instance still starting when
// the wait ends shows as "starting" in Status.
func (o *OneShot) WithHost(ctx context.Context, std console.Stdio, name string, fn func(h *host.Host) int) int {
	c, err := Load(o.File)
	if err != nil {
		return Fail(std, name, err)
	}
	return o.WithComposition(ctx, std, name, c, fn)
}

// WithComposition is WithHost for a command that has read the
// composition already (chat looks for its agent entry first).
func (o *OneShot) WithComposition(ctx context.Context, std console.Stdio, name string, c *host.Composition, fn func(h *host.Host) int) int {
	opts := OnceOptions{Logger: Logger(std, o.LogFormat, o.LogLevel), Wait: o.Wait, LoginOut: std.Display().Err, OpenURL: std.OpenURL}
	if o.Elicit == "defaults" {
		opts.Answerer = elicit.Defaults()
	}
	return Once(ctx, c, opts, func(err error) {
		if o.Failed != nil {
			o.Failed(err)
		}
		Fail(std, name, err)
	}, fn)
}

// WithAnswers runs fn on the running host of o.File when there is one
// (saying so on stderr), else, or with o.NoAttach, on a host of its own
// (WithHost). A running host that does not answer is warned about, and
// not used; one that refuses the connection is an error saying why: a
// host runs, and a second copy of its composition (its servers started
// twice) is what --no-attach asks for, not what a refusal should bring.
func (o *OneShot) WithAnswers(ctx context.Context, std console.Stdio, name string, fn func(a app.App) int) int {
	if !o.NoAttach {
		c, ok, err := o.Attach(ctx, std)
		if err != nil {
			return Fail(std, name, fmt.Errorf("%w (--no-attach starts a host of its own instead)", err))
		}
		if ok {
			defer c.Close()
			return fn(c)
		}
	}
	return o.WithHost(ctx, std, name, func(h *host.Host) int {
		return fn(&app.Local{Host: h, File: o.File})
	})
}

// Attach connects to the running host of o.File, if there is one. A
// host that refused the connection (control.ErrRefused) is the error,
// naming the file.
func (o *OneShot) Attach(ctx context.Context, std console.Stdio) (*control.Client, bool, error) {
	c, err := control.Dial(ctx, o.File)
	if err != nil {
		if errors.Is(err, control.ErrRefused) {
			return nil, false, fmt.Errorf("%s: %w", o.File, err)
		}
		if !errors.Is(err, control.ErrNoHost) {
			Logger(std, o.LogFormat, o.LogLevel).Warn("cannot reach the running host of the composition; starting one of its own", "file", o.File, "err", err)
		}
		return nil, false, nil
	}
	fmt.Fprintf(std.Display().Err, "dsh-host: attached to the running host (pid %d) for %s\n", c.PID, o.File)
	if home := c.OtherHome(); home != "" {
		fmt.Fprintf(std.Display().Err, "dsh-host: that host runs under DSH_HOME=%s, not this command's\n", home)
	}
	return c, true, nil
}

// Check is `dsh-host check`: it reads the composition in file and checks
// every entry as the host would before applying it, printing each problem
// (one a line, file:line first) to std's stderr, or that it is fine.
func Check(std console.Stdio, file string) int {
	// Load returns what parsed along with its problems, so that
	// Check can report those of the entries too.
	c, err := Load(file)
	if c != nil {
		err = errors.Join(err, host.Check(c))
	}
	screen := std.Display()
	if err != nil {
		problems := ProblemLines(err)
		fmt.Fprintf(screen.Err, "%s: %d problem(s):\n", file, len(problems))
		for _, line := range problems {
			fmt.Fprintf(screen.Err, "  %s\n", line)
		}
		return cli.ExitFail
	}
	// Warnings (a rule that can match nothing) do not fail the check.
	warnings, _ := host.Lint(c)
	for _, w := range warnings {
		fmt.Fprintf(screen.Err, "warning: %s\n", w)
	}
	fmt.Fprintf(screen.Out, "%s: ok, %d entries\n", file, len(c.Entries))
	return cli.ExitOK
}

// WithLocal is WithComposition for a front end that stands on app.App.
func (o *OneShot) WithLocal(ctx context.Context, std console.Stdio, name string, c *host.Composition, fn func(a *app.Local) int) int {
	return o.WithComposition(ctx, std, name, c, func(h *host.Host) int {
		return fn(&app.Local{Host: h, File: o.File})
	})
}
