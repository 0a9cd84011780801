package main

// `dsh-host chat`: the console with the agent plugin's model as the handler
// of plain lines, or one turn for scripts with -p.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/chatcomp"
	"github.com/dsh-host/dsh-host/internal/chatui"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

// chatTakesInterrupts is true when args run chat: main then leaves SIGINT to
// it (a Ctrl-C cancels a turn) instead of stopping the process.
func chatTakesInterrupts(args []string) bool { return len(args) > 0 && args[0] == "chat" }

func cmdChat(ctx context.Context, args []string, io Stdio) int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	done := make(chan struct{})
	defer close(done)
	return runChat(ctx, args, io, sig, func(byInterrupt bool) {
		// As under run, the Ctrl-C after the one that began the shutdown
		// is SIGINT's default again, which kills a shutdown that hangs.
		if byInterrupt {
			signal.Stop(sig)
			return
		}
		go func() {
			select {
			case <-sig:
				signal.Stop(sig)
			case <-done:
			}
		}()
	})
}

// runChat is chat with its Ctrl-Cs read from interrupts (tests send their
// own). release is called once the turn or the console is over, before the
// host shuts down, with whether a Ctrl-C ended it: Ctrl-C is then no
// longer chat's (cmdChat gives it back to the process).
func runChat(ctx context.Context, args []string, io Stdio, interrupts <-chan os.Signal, release func(byInterrupt bool)) int {
	fs := flagSet("chat", chatui.Synopsis, chatui.About)
	var o hostrun.OneShot
	o.Register(fs)
	var cf chatui.Flags
	cf.Register(fs)
	args, _ = chatui.BareP(fs, args)
	args = cf.BareResume(fs, args)
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	if err := cf.Parsed(fs); err != nil {
		return usageError(fs, io, "%v", err)
	}
	// Under -p a script reading JSON from stdout reads why a run failed
	// before its turn, too.
	o.Failed = func(err error) { cf.FailedResult(io.Out, err) }
	if err := cf.TakeStdin(io.In, io.display().Err); err != nil {
		o.Failed(err)
		return fail(io, "chat", err)
	}
	if err := cf.Check(); err != nil {
		return usageError(fs, io, "%v", err)
	}
	// Chat works from any directory: without -c and composition.yml, the
	// user's chat.yml or the built-in workspace composition.
	named := false
	fs.Visit(func(f *flag.Flag) { named = named || f.Name == "c" })
	c, file, _, err := chatcomp.Load(o.File, named)
	o.File = file
	if err != nil {
		o.Failed(err)
		return fail(io, "chat", err)
	}
	chat, err := chatui.New(c, o.File, cf.Resume(), io.front())
	if errors.Is(err, chatui.ErrNoAgent) {
		o.Failed(err)
		fmt.Fprint(io.Err, chatui.NoAgentHelp(o.File))
		return exitFail
	}
	if err != nil {
		o.Failed(err)
		return fail(io, "chat", err)
	}
	// A Ctrl-C while the composition starts stops the start.
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	go func() {
		select {
		case <-interrupts:
			cancelStart()
		case <-startCtx.Done():
		}
	}()
	return o.WithLocal(startCtx, io.front(), "chat", c, func(a *app.Local) int {
		cancelStart() // the start is over: interrupts are the turns' now
		var interrupted bool
		var err error
		if cf.Once {
			interrupted, err = chat.Once(ctx, a, cf.Prompt, cf.Format, cf.Yes, interrupts)
		} else {
			interrupted, err = chat.Console(ctx, a, cf.Yes, interrupts)
		}
		release(interrupted)
		if err != nil {
			return fail(io, "chat", err)
		}
		return exitOK
	})
}
