package console

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/dsh-host/dsh-host/host"
)

// Startup prints "connecting 2/5: github…" lines while a composition
// starts, from the host's status changes (Observe), then a summary
// (Finish). An instance that claims an MCP server's name connects; any
// other starts. The built-in services start in
// microseconds, and a lazy server starts on its first call
// (InstanceStatus.Lazy): both are left out. The host announces every
// entry of a composition (pending) before it starts any, so the count is
// whole by the first line.
type Startup struct {
	mu      sync.Mutex
	w       io.Writer
	builtin map[string]bool
	shown   map[string]bool // ids of the entries progress counts
	started map[string]bool
	done    bool
}

// NewStartup writes its lines to w.
func NewStartup(w io.Writer) *Startup {
	p := &Startup{w: w, builtin: map[string]bool{}, shown: map[string]bool{}, started: map[string]bool{}}
	for _, pl := range host.Plugins() {
		p.builtin[pl.Name] = pl.Builtin
	}
	return p
}

// Observe is the host's status callback (host.OnStatus).
func (p *Startup) Observe(s host.InstanceStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	if s.State == host.StateDisabled || p.builtin[s.Plugin] || s.Lazy {
		delete(p.shown, s.ID)
	} else {
		p.shown[s.ID] = true
	}
	switch s.State {
	case host.StateStarting:
		if p.started[s.ID] || !p.shown[s.ID] {
			return
		}
		p.started[s.ID] = true
		verb := "starting"
		if slices.ContainsFunc(s.Claims, func(c host.Claim) bool { return c.Kind == "serverName" }) {
			verb = "connecting"
		}
		if total := len(p.shown); total >= len(p.started) {
			fmt.Fprintf(p.w, "%s %d/%d: %s…\n", verb, len(p.started), total, s.ID)
		} else {
			fmt.Fprintf(p.w, "%s %d: %s…\n", verb, len(p.started), s.ID)
		}
	case host.StateFailed:
		fmt.Fprintf(p.w, "failed: %s: %s\n", s.ID, s.Err)
	}
}

// Finish stops the progress lines and prints a summary of st, then hint.
func (p *Startup) Finish(st []host.InstanceStatus, hint string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	fmt.Fprintln(p.w, Summary(st)+hint)
}

// Summary counts st by state: "ready: 4 active, 1 failed".
func Summary(st []host.InstanceStatus) string {
	order := []host.State{host.StateActive, host.StateStarting, host.StatePending, host.StateFailed, host.StateDisabled}
	n := map[host.State]int{}
	for _, s := range st {
		n[s.State]++
	}
	out := "ready:"
	sep := " "
	for _, state := range order {
		if n[state] > 0 {
			out += fmt.Sprintf("%s%d %s", sep, n[state], state)
			sep = ", "
		}
	}
	if sep == " " {
		out += " no instances"
	}
	return out
}
