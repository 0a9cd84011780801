package tools

import (
	"context"
	"slices"
	"sync"

	"github.com/dsh-host/dsh-host/host"
)

// starting counts the instances that declared their tools still coming:
// a lazy MCP server with no catalog cache is active at once, and its tools
// arrive with its first connection. A one-shot command (dsh-host call,
// tools, prompt) waits for them before it looks a name up; a gateway
// holds its first lists and its readiness for them.
type starting struct {
	mu   sync.Mutex
	ids  map[string]int // instance id -> its declarations still open
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

// Starting declares that the instance of s registers tools still to come;
// done (idempotent, and run at the latest when s is disposed) says they
// came, or will not.
func (r *Registry) Starting(s *host.Scope) (done func()) {
	st := &r.starting
	id := s.ID()
	st.mu.Lock()
	if st.n == 0 {
		st.idle = make(chan struct{})
	}
	st.n++
	if st.ids == nil {
		st.ids = map[string]int{}
	}
	st.ids[id]++
	st.mu.Unlock()
	// Effect runs it once: at done, or when s is disposed.
	return s.Effect("tools still starting", func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.ids[id]--; st.ids[id] == 0 {
			delete(st.ids, id)
		}
		if st.n--; st.n == 0 {
			close(st.idle)
			st.idle = nil
		}
	})
}

// StillStarting returns the ids of the instances whose tools are still to
// come (Starting), sorted; none when every declared instance is done.
func (r *Registry) StillStarting() []string {
	st := &r.starting
	st.mu.Lock()
	defer st.mu.Unlock()
	ids := make([]string, 0, len(st.ids))
	for id := range st.ids {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// WaitStarted waits until no instance declares tools still to come
// (Starting), or ctx ends.
func (r *Registry) WaitStarted(ctx context.Context) error {
	st := &r.starting
	st.mu.Lock()
	idle := st.idle
	st.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
