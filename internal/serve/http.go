package serve

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/host"
)

// HTTP runs c with its gateway listening until ctx ends (SIGINT or
// SIGTERM), then drains the gateway and shuts the host down. signals is
// notified of the signals that stop serve from before the host starts:
// the one that ended ctx is in it, and a second one, during the drain,
// ends the drain at once. An error of the gateway's start, or ErrLogged
// for a shutdown that was not clean.
func HTTP(ctx context.Context, c *host.Composition, cfg Config, signals chan os.Signal) (err error) {
	logger := cfg.Logger
	// Before the host starts the servers, which must not inherit it.
	notify := newNotifier(logger)
	h := host.New(cfg.Host)
	if cfg.Setup != nil {
		cfg.Setup(h)
	}
	startErr := h.Update(ctx, c)
	defer func() {
		if !cfg.Shutdown(h) && err == nil {
			err = ErrLogged
		}
	}()
	// Before the shutdown: a signal during it kills serve, as in run.
	defer signal.Stop(signals)
	if startErr != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting, as run
		}
		return startErr
	}
	if cfg.Started != nil {
		defer cfg.Started(ctx, h)()
	}
	id := cfg.GatewayID
	switch st := host.Find(h.Status(), id); st.State {
	case host.StateFailed:
		return fmt.Errorf("the gateway (entry %q) failed: %s", id, st.Err)
	case host.StateDisabled:
		return fmt.Errorf("the gateway entry %q is disabled in %s: enable it, or remove it to serve as the flags say", id, cfg.File)
	case host.StatePending:
		logger.Warn("the gateway waits for a service; see the host's status above, or run dsh-host check", "entry", id, "waiting", st.Err)
	}
	// The gateway listens from its start; serve says it is ready once the
	// whole composition has started.
	status := "STATUS=waiting for a service"
	if st := host.Find(h.Status(), id); st.State == host.StateActive {
		if st.Endpoint != "" {
			logger.Info("serving MCP over Streamable HTTP", "url", st.Endpoint, "entry", id)
			status = "STATUS=serving " + st.Endpoint
		} else {
			logger.Warn("the gateway has no listener: its entry has no http address; give it one, or serve with --stdio", "entry", id)
			status = "STATUS=no listener"
		}
	}
	notify.send("READY=1\n" + status)
	stopWatch := notify.watch(func(ctx context.Context) error {
		// The host's status takes its lock: a host wedged on it is not
		// healthy, and this goroutine waits with it.
		st := host.Find(h.Status(), id)
		if st.State != host.StateActive {
			return fmt.Errorf("the gateway (entry %q) is %s", id, st.State)
		}
		if st.Endpoint == "" {
			return nil
		}
		return probeHealthz(ctx, st.Endpoint)
	})
	<-ctx.Done()
	stopWatch()
	notify.send("STOPPING=1\nSTATUS=draining")
	drain(h, signals, logger)
	logger.Info("shutting down the gateway")
	return nil
}

// drain drains the host's gateway (gateway.Drain): /readyz fails, new
// sessions and requests are refused, and the requests in flight have the
// gateway's drain timeout to finish. signals holds the signal that
// stopped serve; a second one ends the drain at once, and gives the
// signals back to their default (a third kills the process).
func drain(h *host.Host, signals chan os.Signal, logger *slog.Logger) {
	g, ok := host.Lookup(h, gateway.Key)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.DrainTimeout())
	defer cancel()
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		for n := 0; n < 2; {
			select {
			case <-signals:
				n++
			case <-ctx.Done():
				return
			}
		}
		signal.Stop(signals)
		logger.Warn("second signal: ending the drain now; the requests in flight are cut")
		cancel()
	}()
	start := time.Now()
	left := g.Drain(ctx)
	cancel()
	<-cut
	if left > 0 {
		// Cut answers each: 503 before its answer began, an error saying
		// the gateway stops on a begun event stream.
		refused := g.Cut()
		logger.Warn("the drain ended with requests in flight; they are cut", "inFlight", left, "answered503", refused, "after", time.Since(start).Round(time.Millisecond), "drainTimeout", g.DrainTimeout())
		return
	}
	logger.Info("drained: no request in flight", "after", time.Since(start).Round(time.Microsecond))
}
