package mcpclient

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/stdio"
)

// transportFactory returns a fresh transport for one connection attempt.
// Tests replace it to hand out in-memory transports and count attempts.
type transportFactory func() mcp.Transport

// Values of the inheritEnv key: what a stdio child inherits of the host's
// environment (stdio.Env says what each keeps).
const (
	InheritScrub   = stdio.InheritScrub
	InheritMinimal = stdio.InheritMinimal
	InheritAll     = stdio.InheritAll
)

// newTransportFactory returns the factory for cfg's transport, and a cleanup
// to run once the instance is done with it.
func newTransportFactory(cfg *Config, logger *slog.Logger, environ func() []string) (transportFactory, func()) {
	switch cfg.Transport {
	case TransportStreamableHTTP:
		client, idle, endpoint := remote.NewClient(cfg.URL, cfg.Headers)
		return func() mcp.Transport { return remote.Streamable(client, endpoint) }, idle.CloseIdleConnections
	case TransportSSE:
		client, idle, endpoint := remote.NewClient(cfg.URL, cfg.Headers)
		return func() mcp.Transport { return remote.SSE(client, endpoint) }, idle.CloseIdleConnections
	default:
		return func() mcp.Transport {
			return &stdio.Transport{Command: cfg.Command, Args: cfg.Args, Env: cfg.Env, Dir: cfg.Cwd,
				Inherit: cfg.InheritEnv, Logger: logger, Environ: environ,
				Sandbox: cfg.Sandbox, Roots: cfg.rootPaths()}
		}, func() {}
	}
}

// explainStart adds to the error of a failed connect what the transport
// knows of its cause.
func explainStart(ctx context.Context, tr mcp.Transport, err error) error {
	if t, ok := tr.(*stdio.Transport); ok {
		return t.Explain(ctx, err)
	}
	return remote.Explain(tr, err)
}
