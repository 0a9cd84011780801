package main

// Gateway mode: `dsh-host serve` exposes the composition's assembled tool
// surface as one MCP server, over stdio or Streamable HTTP, while the host
// keeps watching the composition file.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

// defaultHTTPAddr is where `serve` listens when no transport is named.
const defaultHTTPAddr = "127.0.0.1:8931"

// httpShutdownTimeout bounds how long `serve --http` waits for requests in
// flight once it is told to stop.
const httpShutdownTimeout = 5 * time.Second

const serveAbout = `
Serve the composition's tools (folded or not, as the composition says) as one
MCP server. tools/call runs the registry's whole pipeline, so guards apply;
images reach the client as MCP image content. The composition file is watched:
an edit (or SIGHUP) that changes the tool surface sends
notifications/tools/list_changed to connected clients.

  --stdio        for clients that start the gateway as a command (Claude Code,
                 Codex, VS Code); logs go to stderr only, stdout is the protocol
  --http ADDR    Streamable HTTP at http://ADDR/mcp (the default transport, on
                 ` + defaultHTTPAddr + `). A non-loopback ADDR requires --token-env.
                 Requests from a foreign browser Origin are refused (403).

Example, for a client's MCP configuration:
  {"command": "dsh-host", "args": ["serve", "--stdio", "-c", "/path/to/composition.yml"]}`

// cmdServe runs gateway mode until the client goes away (stdio), or until
// SIGINT or SIGTERM. As for run, a shutdown that is not clean exits 1.
func cmdServe(ctx context.Context, args []string, std Stdio) (code int) {
	fs := flagSet("serve", "[-c FILE] --stdio | --http ADDR [--token-env VAR] [flags]", serveAbout)
	var common commonFlags
	common.register(fs, "info")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin/stdout")
	addr := fs.String("http", "", "serve MCP over Streamable HTTP on `ADDR` (default "+defaultHTTPAddr+")")
	tokenEnv := fs.String("token-env", "", "require the bearer token in the environment variable `VAR` (needed for a non-loopback --http address)")
	rest, code, ok := parseArgs(fs, args, std)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(fs, std, "unexpected argument %q", rest[0])
	}
	httpSet := false
	fs.Visit(func(f *flag.Flag) { httpSet = httpSet || f.Name == "http" })
	if *stdio && httpSet {
		return usageError(fs, std, "--stdio and --http exclude each other: pick one transport")
	}
	if *stdio && *tokenEnv != "" {
		return usageError(fs, std, "--token-env applies to --http only: a stdio client is the process that started the gateway")
	}
	if !*stdio && *addr == "" {
		*addr = defaultHTTPAddr
	}
	var token string
	if !*stdio {
		var err error
		if token, err = serveToken(*addr, *tokenEnv); err != nil {
			fmt.Fprintf(std.Err, "dsh-host serve: %v\n", err)
			return exitUsage
		}
	}

	logger := newLogger(std.Err, common.logFormat, common.logLevel)
	h, err := startHost(ctx, common.file, logger)
	if err != nil {
		if ctx.Err() != nil {
			return exitOK // stopped while starting, as run (startHost shut it down)
		}
		return fail(std, "serve", err)
	}
	defer func() {
		if !shutdownHost(h, logger) && code == exitOK {
			code = exitFail
		}
	}()

	reg, store := hostServices(h)
	if reg == nil {
		logger.Warn("the tools service is not running: the gateway serves no tools until it is; see the host's status above, or run dsh-host check", "file", common.file)
	}
	g, err := gateway.New(ctx, reg, store, &gateway.Options{
		Implementation: &mcp.Implementation{Name: "dsh-host", Title: "dsh-host gateway", Version: buildVersion()},
		Logger:         logger,
	})
	if err != nil {
		return fail(std, "serve", err)
	}
	defer g.Close()

	// Keep watching the composition, and follow the host: a reload may
	// replace the tools service, or change the assembly (a folding handler
	// coming or going) without any tool doing so.
	watchCtx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopWatch()
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := h.Watch(watchCtx, common.file); err != nil && watchCtx.Err() == nil {
			logger.Error("the composition is no longer watched; edits will not apply until restart", "file", common.file, "err", err)
		}
	}()
	changed := make(chan struct{}, 1)
	removeStatus := h.OnStatus(func(host.InstanceStatus) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer removeStatus()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-watchCtx.Done():
				return
			case <-hup:
				logger.Info("SIGHUP: reloading", "file", common.file)
				h.Reload()
			case <-changed:
				g.Rebind(hostServices(h))
				g.Refresh()
			}
		}
	}()

	if *stdio {
		return serveStdio(ctx, g, std, logger)
	}
	return serveHTTP(ctx, g, *addr, token, std, logger)
}

// hostServices returns the tool registry and the attachment store h currently
// provides (nil for one that is not running).
func hostServices(h *host.Host) (*tools.Registry, *attachments.Store) {
	reg, _ := host.Lookup(h, tools.Key)
	store, _ := host.Lookup(h, attachments.Key)
	return reg, store
}

// serveToken returns the bearer token the HTTP endpoint requires: the value
// of the variable tokenEnv names, if given. A non-loopback address without a
// token is refused: it would hand every tool of the composition to anyone who
// can reach the port.
func serveToken(addr, tokenEnv string) (string, error) {
	hostname, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--http %q: want HOST:PORT, such as %s: %w", addr, defaultHTTPAddr, err)
	}
	var token string
	if tokenEnv != "" {
		token = os.Getenv(tokenEnv)
		if token == "" {
			return "", fmt.Errorf("--token-env %s: the variable is not set or empty; export a long random token in it", tokenEnv)
		}
	}
	if token == "" && !gateway.IsLoopbackHost(hostname) {
		shown := hostname
		if shown == "" {
			shown = "every interface"
		}
		return "", fmt.Errorf("refusing to serve on %s (%s) without a token: a non-loopback address exposes every tool to the network; "+
			"put a long random token in an environment variable and pass --token-env VAR, or bind 127.0.0.1", addr, shown)
	}
	return token, nil
}

// serveStdio serves one client on io.In/io.Out until it closes its end or ctx
// is done.
func serveStdio(ctx context.Context, g *gateway.Gateway, std Stdio, logger *slog.Logger) int {
	t := &mcp.IOTransport{Reader: readCloser(std.In), Writer: nopWriteCloser{std.Out}}
	logger.Info("serving MCP over stdio")
	err := g.Server().Run(ctx, t)
	if err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
		logger.Error("the stdio session ended with an error", "err", err)
		return exitFail
	}
	logger.Info("stdio client gone; shutting down")
	return exitOK
}

// serveHTTP serves Streamable HTTP on addr until ctx is done.
func serveHTTP(ctx context.Context, g *gateway.Gateway, addr, token string, std Stdio, logger *slog.Logger) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(std, "serve", fmt.Errorf("listen on %s: %w (is another gateway running there? pick another port with --http)", addr, err))
	}
	// Requests (and their long-lived event streams) derive from base, so
	// cancelling it at shutdown ends them instead of waiting them out.
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.HTTPHandler(&gateway.HTTPOptions{Token: token}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "token", token != "")

	select {
	case err := <-served:
		return fail(std, "serve", fmt.Errorf("http server stopped: %w", err))
	case <-ctx.Done():
	}
	logger.Info("shutting down the gateway")
	cancelBase()
	sctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("requests still running at shutdown were cut", "err", err)
		srv.Close()
	}
	<-served
	return exitOK
}

// buildVersion is the module version the binary was built at ("dev" for a
// build from a work tree), which the gateway reports to its clients.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// readCloser returns r as an io.ReadCloser, closing it only if it can be.
func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps the transport from closing stdout: the process, not
// the session, owns it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
