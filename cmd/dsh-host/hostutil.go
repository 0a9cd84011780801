package main

// Helpers every subcommand that starts a host shares (run, tools, call,
// prompt, command, serve).

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

// startHost is hostrun.Start.
func startHost(ctx context.Context, c *host.Composition, opts *host.Options, observe func(host.InstanceStatus), setup ...func(*host.Host)) (*host.Host, error) {
	return hostrun.Start(ctx, c, opts, observe, setup...)
}

// hangups catches SIGHUP until signal.Stop(hup). run and serve call it
// before the composition starts: a SIGHUP that comes meanwhile is then a
// reload once it has (hostrun.Follow), not SIGHUP's default, which kills the
// process without disposing anything.
func hangups() chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup
}
