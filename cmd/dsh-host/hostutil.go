package main

// Helpers every subcommand that starts a host shares (run, tools, call,
// prompt, command, serve).

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
)

// startHost is how every subcommand starts a host: it creates one with
// opts, applies c (hostrun.Load's) and returns once every instance has
// settled (active, failed or pending) or ctx ends. observe, if not nil,
// sees every status change from the first; each setup runs on the
// new host before anything starts.
//
// The host is returned whatever the error, and the caller shuts it down:
// instances still starting when ctx ends go on in the background until
// then. An instance that failed is in Status, not in the error; the error is
// ctx's.
func startHost(ctx context.Context, c *host.Composition, opts *host.Options, observe func(host.InstanceStatus), setup ...func(*host.Host)) (*host.Host, error) {
	h := host.New(opts)
	if observe != nil {
		h.OnStatus(observe)
	}
	for _, fn := range setup {
		fn(h)
	}
	return h, h.Update(ctx, c)
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

// isTerminal reports whether v is an *os.File open on a terminal.
func isTerminal(v any) bool { return console.IsTerminal(v) }
