package main

// Gateway mode: `dsh-host serve` is the command-line front of the gateway
// plugin. It adds a gateway entry its flags configure (unless the
// composition declares one), runs the composition as run does, and for
// --stdio serves one session on the gateway the host provides.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/cli"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/serve"
	"github.com/dsh-host/dsh-host/internal/webui"
)

// cmdServe runs gateway mode until the client goes away (stdio), or until
// SIGINT or SIGTERM. As for run, a shutdown that is not clean exits 1.
func cmdServe(ctx context.Context, args []string, std Stdio) (code int) {
	fs := flagSet("serve", "[-c FILE] --stdio | --http ADDR [--token-env VAR | --token-file FILE] [flags]",
		serve.About+"\n\nEnvironment (a flag given wins):\n"+cli.EnvHelp(serve.Env))
	var common commonFlags
	common.Register(fs, "info")
	var sc serve.CommandLine
	sc.Register(fs)
	cli.BindEnv(fs, serve.Env)
	fs.Lookup("log-level").Usage += " (env DSH_LOG_LEVEL)"
	rest, code, ok := parseArgs(fs, args, std)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(fs, std, "unexpected argument %q", rest[0])
	}
	if _, err := cli.FlagsFromEnv(fs, serve.Env, os.Getenv, sc.Stdio); err != nil {
		fmt.Fprintf(std.Err, "dsh-host serve: %v\n", err)
		return exitUsage
	}
	serve.TuneGC(os.Getenv)
	if err := sc.Parsed(fs); err != nil {
		return usageError(fs, std, "%v", err)
	}
	if sc.UI != "" {
		if err := webui.CheckAddr(sc.UI); err != nil {
			return usageError(fs, std, "%v", err)
		}
	}
	// The entry the flags make, decoded and validated as the host will,
	// before anything starts: what the flags say wrong is a usage error.
	flagEntry, err := sc.Flags.Entry()
	if err != nil {
		fmt.Fprintf(std.Err, "dsh-host serve: %v\n", err)
		return exitUsage
	}

	c, loadErr := hostrun.Load(common.File)
	if loadErr == nil && sc.Stdio {
		loadErr = host.Check(c) // what the host would refuse to apply
	}
	if loadErr != nil {
		if !sc.Stdio {
			return fail(std, "serve", loadErr)
		}
		// A client that started serve shows "connection closed" and
		// nothing else: it gets a session that says what is wrong, and
		// the file is watched until it loads.
		c = &host.Composition{File: common.File}
	}
	if sc.Raw {
		if servers := serve.MCPServers(c); len(servers) > 1 {
			return usageError(fs, std, "--raw serves one MCP server under its own names, and %s has %d: %s; serve them without --raw (prefixed), or compose one",
				common.File, len(servers), strings.Join(servers, ", "))
		}
	}
	if !sc.LevelSet {
		common.LogLevel = serve.LogLevel(sc.Stdio, os.Getenv)
	}
	logger := hostrun.NewLogger(std.Err, common.LogFormat, common.LogLevel)
	opts := &host.Options{Logger: logger}
	defer hostrun.StartTelemetry(ctx, opts, logger)()
	id, err := serve.ComposedGateway(c)
	switch {
	case err != nil:
		return fail(std, "serve", err)
	case id == "":
		id = serve.GatewayID
		opts.Entries = []host.Entry{flagEntry}
	case sc.GatewayFlagsGiven():
		logger.Warn("the composition declares a gateway entry, which wins: --http, --token-env, --token-file, --tls-cert, --tls-key, --raw, --stateless, --name-limit, --drop-marker, --drain-timeout, --list-wait and --metrics (and their DSH_ variables) are ignored", "file", common.File, "entry", id)
	}

	hup := hostrun.Hangups()
	defer signal.Stop(hup)
	cfg := serve.Config{File: common.File, GatewayID: id, Host: opts, Logger: logger,
		Shutdown: func(h *host.Host) bool { return hostrun.Shutdown(h, logger) },
		Started: func(ctx context.Context, h *host.Host) func() {
			stopFollow, stopControl := hostrun.Follow(ctx, h, common.File, hup, logger), hostrun.ServeControl(h, common.File, logger)
			stopUI := func() {}
			if sc.UI != "" {
				var err error
				// stdout may be the MCP stream: the URL goes to stderr.
				if stopUI, err = webui.ForHost(h, common.File, sc.UI, std.Err, logger); err != nil {
					logger.Error("no web console", "err", err)
					stopUI = func() {}
				}
			}
			return func() { stopUI(); stopControl(); stopFollow() }
		}}
	if sc.Stdio {
		var problem string
		if loadErr != nil {
			problem = serve.NotApplied(common.File, loadErr, false)
			logger.Error("the composition is not applied; serving a session that says so, and watching the file", "file", common.File, "err", loadErr)
		}
		return serveExit(std, serve.Stdio(ctx, c, cfg, problem, std.In, std.Out))
	}
	// The signals that stop serve are caught here too, from now on, so
	// that the second one, during the drain, ends the drain (main's own
	// catch gives the first back to the default, which would kill serve
	// without disposing of its servers).
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	return serveExit(std, serve.HTTP(ctx, c, cfg, signals))
}

// serveExit is serve's exit code for err: a failure the log holds already
// is not said again.
func serveExit(std Stdio, err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, serve.ErrLogged):
		return exitFail
	}
	return fail(std, "serve", err)
}
