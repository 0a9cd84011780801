package mcpclient

import (
	"context"
	"fmt"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/stdio"
)

// CheckSandbox runs the sandbox's probes in the sandbox the stdio server
// of cfg would start in, with the host's environment, without starting
// the server (`dsh-host sandbox check`). file is the file the entry is in,
// against whose directory a relative cwd is taken, as when it runs.
func CheckSandbox(ctx context.Context, cfg Config, file string) (*sandbox.Report, error) {
	if cfg.Transport != TransportStdio {
		return nil, fmt.Errorf("%s is a %s server: the sandbox is for stdio servers, which run on this machine", cfg.ServerName, cfg.Transport)
	}
	t := &stdio.Transport{Command: cfg.Command, Args: cfg.Args, Env: cfg.Env, Dir: host.EntryPath(file, cfg.Cwd),
		Inherit: cfg.InheritEnv, Sandbox: cfg.Sandbox, Roots: cfg.rootPaths()}
	return t.CheckSandbox(ctx)
}
