package tools

import (
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/roots"
	"github.com/dsh-host/dsh-host/services/sampling"
)

// Channels are a call's back-channels to whoever started it: what a tool
// (an MCP server behind it) sends while the call runs, and who answers
// what it asks. Whoever starts a call fills the channels it serves (the
// gateway for its client, the console, the agent, a one-shot command) in
// Call.Channels, through Registry.Run; whoever serves the call (a tool, a
// hook) reads them from its Call. A tool that calls another passes its
// call's Channels on. A nil *Channels, or a nil field, is a channel
// nobody listens on; each method checks.
type Channels struct {
	// Progress receives the call's progress reports (an MCP server's
	// notifications/progress). It may be called from other goroutines,
	// one report at a time per call, and must not block for long.
	Progress func(Progress)
	// Log receives the log messages an MCP server sends while the call
	// runs (a gateway relays them to its client); the same rules.
	Log func(LogMessage)
	// Answerer answers the questions asked during the call (a server's
	// elicitation, the policy's approval), ahead of the elicitation
	// service's installed answerer.
	Answerer elicit.Answerer
	// Roots lists the caller's roots, for a server's roots/list during
	// the call (the gateway, for a client that declared roots); nil: the
	// entry's own roots.
	Roots roots.Lister
	// Sampler answers a server's sampling request during the call
	// (sampling/createMessage); nil: the request is refused.
	Sampler sampling.Sampler
	// OneShot, when set, marks a one-shot command's call (dsh-host call,
	// chat -p): nobody is there to answer, so an approval is given when
	// Yes (--yes) and refused, naming the flag, otherwise.
	OneShot *OneShot
}

// OneShot is a one-shot command's answer to every approval.
type OneShot struct{ Yes bool }

// ReportProgress passes p to the Progress channel, if any.
func (c *Channels) ReportProgress(p Progress) {
	if c != nil && c.Progress != nil {
		c.Progress(p)
	}
}

// WantsProgress reports whether someone listens to the call's progress.
func (c *Channels) WantsProgress() bool { return c != nil && c.Progress != nil }

// ReportLog passes m to the Log channel, if any.
func (c *Channels) ReportLog(m LogMessage) {
	if c != nil && c.Log != nil {
		c.Log(m)
	}
}

// WantsLog reports whether someone relays the call's server log
// messages.
func (c *Channels) WantsLog() bool { return c != nil && c.Log != nil }

// CallerAnswerer returns the Answerer channel, or nil.
func (c *Channels) CallerAnswerer() elicit.Answerer {
	if c == nil {
		return nil
	}
	return c.Answerer
}

// CallerRoots returns the Roots channel, or nil.
func (c *Channels) CallerRoots() roots.Lister {
	if c == nil {
		return nil
	}
	return c.Roots
}

// CallerSampler returns the Sampler channel, or nil.
func (c *Channels) CallerSampler() sampling.Sampler {
	if c == nil {
		return nil
	}
	return c.Sampler
}

// OneShotAnswer says whether the call is a one-shot command's, and then
// whether --yes was given.
func (c *Channels) OneShotAnswer() (yes, oneShot bool) {
	if c == nil || c.OneShot == nil {
		return false, false
	}
	return c.OneShot.Yes, true
}
