package main

import (
	"context"
	"log/slog"
	"os/signal"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/webui"
)

func cmdRun(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("run")
	var cf commonFlags
	cf.Register(fs, "info")
	consoleMode := "auto"
	fs.Var(choice{Value: &consoleMode, Allowed: []string{"auto", "on", "off"}}, "console", "console `mode` on stdin: auto (when stdin and stdout are terminals), on, or off")
	uiAddr := fs.String("ui", "", "also serve the web console on this loopback `ADDR`, such as 127.0.0.1:0 (see dsh-host ui)")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	if *uiAddr != "" {
		if err := webui.CheckAddr(*uiAddr); err != nil {
			return usageError(fs, io, "%v", err)
		}
	}
	useConsole := consoleMode == "on" || consoleMode == "auto" && io.terminal(io.In) && io.terminal(io.Out)

	logger := io.logger(cf.LogFormat, cf.LogLevel)
	// Progress lines and the console quote servers (errors, tools,
	// replies): on a terminal they are escaped.
	screen := io.display()
	hup := hostrun.Hangups()
	defer signal.Stop(hup)
	// Progress goes to stdout whether or not there is a console: under a
	// supervisor too, a slow start shows what it waits for.
	c, err := hostrun.Load(cf.File)
	if err != nil {
		return fail(io, "run", err)
	}
	prog := console.NewStartup(screen.Out)
	gate := hostrun.AllowLogins(io.display().Err, io.OpenURL)
	defer gate.Remove()
	opts := &host.Options{Logger: logger}
	defer hostrun.StartTelemetry(ctx, opts, logger)()
	h, err := hostrun.Start(ctx, c, opts, prog.Observe, gate.Install)
	if err != nil {
		if ctx.Err() != nil {
			// SIGINT or SIGTERM while instances were starting: a stop
			// like any other, not a failure to load.
			logger.Info("stopped while starting; shutting down")
			return stopped(h, logger)
		}
		hostrun.Shutdown(h, logger)
		return fail(io, "run", err)
	}
	hint := ""
	if useConsole {
		hint = " — /help for commands"
	}
	prog.Finish(h.Status(), hint)

	stopFollowing := hostrun.Follow(ctx, h, cf.File, hup, logger)
	stopControl := hostrun.ServeControl(h, cf.File, logger)
	stopUI := func() {}
	if *uiAddr != "" {
		if stopUI, err = webui.ForHost(h, cf.File, *uiAddr, screen.Out, logger); err != nil {
			stopControl()
			stopFollowing()
			hostrun.Shutdown(h, logger)
			return fail(io, "run", err)
		}
	}
	quit := make(chan struct{})
	consoleCtx, stopConsole := context.WithCancel(ctx)
	defer stopConsole()
	if useConsole {
		go func() {
			defer close(quit)
			console.Run(consoleCtx, &app.Local{Host: h, File: cf.File}, io.In, screen.Out, io.liveTerminal(io.Out), console.Hooks{})
		}()
	}
	logger.Info("running; SIGHUP reloads, SIGINT or SIGTERM stops", "file", cf.File)
	select {
	case <-ctx.Done():
	case <-quit:
	}
	logger.Info("shutting down")
	stopConsole()
	stopUI()
	stopControl()
	stopFollowing()
	return stopped(h, logger)
}

// stopped shuts h down and returns run's exit code: 0 when the shutdown
// was clean.
func stopped(h *host.Host, logger *slog.Logger) int {
	if !hostrun.Shutdown(h, logger) {
		return exitFail
	}
	logger.Info("shut down cleanly")
	return exitOK
}
