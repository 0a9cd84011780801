package mcpclient

import (
	"fmt"
	"time"
)

// holdWhileRetrying keeps the host's first readiness (a gateway's /readyz
// and its first lists) back while an eager server whose first connection
// failed retries, until it connects (connected) or startupTimeoutMs from
// its start has passed, whichever comes first: a server that failed only
// because the machine was loaded is then in the surface /readyz announces,
// and one that stays broken keeps a replica out of its load balancer no
// longer than a slow server would; its status says why. Not for a server
// that will not retry (reconnect disabled, failOnStartupError) or waits
// for a person's login. Runs on the supervisor, before Apply returns.
func (c *client) holdWhileRetrying(began time.Time) {
	if c.lazy() || c.opt.cfg.FailOnStartupError || c.opt.scope == nil ||
		c.conn != nil || c.retry.halted || c.login.needed || c.lz.lastErr == nil {
		return
	}
	left := ms(c.opt.cfg.StartupTimeoutMs) - time.Since(began)
	if left <= 0 {
		return
	}
	s := c.opt.scope
	// The reason goes to /readyz, which asks for no token: the error (a
	// server's stderr lines) stays in the status.
	done := s.HoldReadiness(fmt.Sprintf("%s: the first connection failed (dsh-host status says why); retrying, waited for at most startupTimeoutMs (%dms) from its start",
		c.label, c.opt.cfg.StartupTimeoutMs))
	c.lz.readyHold = done
	s.AfterFunc("readiness hold bound", left, done)
}

// releaseReadyHold ends holdWhileRetrying's hold: the server connected, or
// will not be retried any more.
func (c *client) releaseReadyHold() {
	if c.lz.readyHold != nil {
		c.lz.readyHold()
		c.lz.readyHold = nil
	}
}
