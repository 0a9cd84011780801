package mcpclient

import (
	"fmt"

	"github.com/dsh-host/dsh-host/host"
)

// Readiness (host.Definition.ReportsReady): an instance is ready once its
// tools are registered, from the server or, for a lazy server, from the
// catalog cache; it has failed when its first connection attempt fails or
// no tools came within startupTimeoutMs. The host waits for that before it
// swaps an edited entry over to the new instance, which starts beside the
// old one (host.Definition.Overlap): until then the new instance's tools,
// resources and prompts stay staged, and a failure leaves the old server
// running.

// watchStartup fails the instance if it is not ready within
// startupTimeoutMs: a server stuck at start is bounded there, not by the
// host's own ReadyTimeout.
func watchStartup(s *host.Scope, label string, timeoutMs int) {
	s.AfterFunc("startup readiness", ms(timeoutMs), func() {
		s.Fail(fmt.Errorf("%s: no tools within startupTimeoutMs (%dms)", label, timeoutMs))
	})
}

// reportReady tells the host the instance is ready: its tools are
// registered. Only the first word (Ready or Fail) counts.
func (c *client) reportReady() {
	if c.opt.scope != nil {
		c.opt.scope.Ready()
	}
}

// reportFailed tells the host the first connection attempt failed.
func (c *client) reportFailed(err error) {
	if c.opt.scope != nil {
		c.opt.scope.Fail(err) // named by the host, as Apply's error
	}
}
