package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/internal/childenv"
	"github.com/dsh-host/dsh-host/internal/sandbox"
)

type runIn struct {
	Command string `json:"command" jsonschema:"the shell command (sh -c) to run in the working directory"`
	Timeout int    `json:"timeout_seconds,omitempty" jsonschema:"stop it after this many seconds (default, and at most, the workspace's timeout)"`
}

// capped keeps the first max bytes written and counts the rest: a
// command's output may be endless. exec calls Write from one goroutine
// when Stdout and Stderr are the same writer.
type capped struct {
	buf     []byte
	max     int
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	keep := min(len(p), c.max-len(c.buf))
	c.buf = append(c.buf, p[:keep]...)
	c.dropped += int64(len(p) - keep)
	return len(p), nil
}

// run runs the command in the sandbox (write access to the directory
// alone, a network only with network: true), in a process group of its
// own that is killed whole on the timeout or the call's cancellation.
func (w *Workspace) run(ctx context.Context, in runIn) (any, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, errors.New("command is empty")
	}
	timeout := w.cfg.Timeout
	// Compared in seconds: a model's huge count times a second would
	// overflow the Duration.
	if in.Timeout > 0 && int64(in.Timeout) <= int64(timeout/time.Second) {
		timeout = time.Duration(in.Timeout) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", in.Command)
	cmd.Dir = w.dir
	// Not the host's whole environment: the model's command would read
	// the API keys of chat's providers and the host's tokens.
	cmd.Env = childenv.Keep(w.environ(), w.cfg.Env)
	out := &capped{max: w.cfg.MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	ownGroup(cmd)
	// Its output pipe may be held by a child the kill missed: Wait gives
	// up on it after this.
	cmd.WaitDelay = 2 * time.Second
	cfg := sandbox.Config{Mode: w.cfg.Sandbox}
	if w.cfg.Network {
		cfg.Connect.Any = true
	}
	launch, err := sandbox.Start(cmd, cfg, []string{w.dir})
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	defer launch.Cleanup()
	if launch.Warning != "" {
		w.logger.Warn("workspace: run is not sandboxed", "why", launch.Warning)
	}
	err = cmd.Run()
	killGroup(cmd)
	var b strings.Builder
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		fmt.Fprintf(&b, "timed out after %v: killed\n", timeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &exit):
		fmt.Fprintf(&b, "exit status %d\n", exit.ExitCode())
	case err != nil:
		return nil, fmt.Errorf("run: %w", err)
	default:
		b.WriteString("exit status 0\n")
	}
	b.Write(out.buf)
	if out.dropped > 0 {
		fmt.Fprintf(&b, "\n(output cut: %d more bytes)\n", out.dropped)
	}
	return b.String(), nil
}
