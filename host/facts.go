package host

import "strings"

// facts are what an instance publishes of itself for front ends to read
// (InstanceStatus's typed fields), beside its human Detail.
type facts struct {
	endpoint  string
	dormant   bool
	lastError string
	sandbox   string
	transport string
	reconnect int
	stderr    func() []string
}

// SetEndpoint publishes the URL the instance serves at (a gateway's
// listener), "" when it serves nowhere: InstanceStatus.Endpoint.
func (s *Scope) SetEndpoint(url string) { s.setFact(func(f *facts) { f.endpoint = url }) }

// SetDormant publishes whether the instance's work is stopped until a call
// wakes it (a lazy server before its first call, or stopped after idle):
// InstanceStatus.Dormant.
func (s *Scope) SetDormant(dormant bool) { s.setFact(func(f *facts) { f.dormant = dormant }) }

// SetLastError publishes the last failure the instance retries or
// recovers from on its own ("" once it has): InstanceStatus.LastError.
func (s *Scope) SetLastError(msg string) { s.setFact(func(f *facts) { f.lastError = msg }) }

// SetSandbox publishes in a few words how the instance's child processes
// are confined: InstanceStatus.Sandbox.
func (s *Scope) SetSandbox(summary string) { s.setFact(func(f *facts) { f.sandbox = summary }) }

// SetTransport publishes how the instance reaches its server ("stdio",
// "streamable-http", "sse"): InstanceStatus.Transport.
func (s *Scope) SetTransport(name string) { s.setFact(func(f *facts) { f.transport = name }) }

// SetReconnects publishes how many times the instance reconnected to its
// server since it started: InstanceStatus.Reconnects.
func (s *Scope) SetReconnects(n int) { s.setFact(func(f *facts) { f.reconnect = n }) }

func (s *Scope) setFact(set func(*facts)) {
	s.factsMu.Lock()
	var next facts
	if p := s.facts.Load(); p != nil {
		next = *p
	}
	set(&next)
	s.facts.Store(&next)
	s.factsMu.Unlock()
	if s.inst != nil {
		s.inst.host.touch() // WaitStatus sees it, as a detail
	}
}

// SetStderr publishes where the last lines the instance's child process
// wrote to stderr are read (InstanceStatus.Stderr), nil for none. fn is
// called at each Status, under no lock of the host's: it must be quick
// and must not block. A line written publishes no status change.
func (s *Scope) SetStderr(fn func() []string) { s.setFact(func(f *facts) { f.stderr = fn }) }

// addFacts fills st's typed fields from in's last run and its config.
func (in *instance) addFacts(st *InstanceStatus) {
	st.Lazy = in.lazy
	st.Claims = in.claims
	s := in.last
	if s == nil {
		return
	}
	if p := s.claims.Load(); p != nil {
		st.Claims = *p
	}
	if f := s.facts.Load(); f != nil {
		st.Endpoint, st.Dormant, st.LastError, st.Sandbox = f.endpoint, f.dormant, f.lastError, f.sandbox
		st.Transport, st.Reconnects = f.transport, f.reconnect
		if f.stderr != nil {
			st.Stderr = f.stderr()
		}
	}
	if len(st.Claims) > 0 {
		// Callers may keep and change a snapshot.
		st.Claims = append([]Claim(nil), st.Claims...)
	}
}

// Instances returns the status of every instance of the host that runs s
// (Host.Status), for a service that answers for the others: the commands
// service names the failed instance a command would come from. It is nil
// on a scope made by NewScope.
func (s *Scope) Instances() []InstanceStatus {
	if s.inst == nil {
		return nil
	}
	return s.inst.host.Status()
}

// Owner returns the instance whose claims cover the tool name, whatever
// its state: a claim of Kind "tool" with that Value, or the longest
// ToolPrefix that starts it (mcp__<serverName>__ for an MCP server,
// named after its serverName, not its entry id). A front end names it
// when a call finds no such tool: a failed instance's tools are never
// registered, but its claims are known.
func (h *Host) Owner(tool string) (InstanceStatus, bool) {
	return Owner(h.Status(), tool)
}

// Owner is Host.Owner over a Status snapshot, for a front end that has
// one (from a running host's control socket).
func Owner(st []InstanceStatus, tool string) (InstanceStatus, bool) {
	best, bestLen := -1, -1
	for i, s := range st {
		for _, c := range s.Claims {
			n := -1
			switch {
			case c.Kind == "tool" && c.Value == tool:
				n = len(tool) + 1 // an exact name beats any prefix
			case c.ToolPrefix != "" && strings.HasPrefix(tool, c.ToolPrefix):
				n = len(c.ToolPrefix)
			}
			if n > bestLen {
				best, bestLen = i, n
			}
		}
	}
	if best < 0 {
		return InstanceStatus{}, false
	}
	return st[best], true
}
