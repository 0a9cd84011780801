// Package reconcile keeps a served set in line with a wanted one: the
// gateway's tools, resources, resource templates and prompts, each a set
// of entries go-sdk serves under a key (a name, a URI). An entry whose
// state is unchanged is left alone, so an unchanged list sends clients
// nothing; the others are removed, added or replaced.
package reconcile

import "sort"

// Entry is one wanted entry: the key it is served under, the state two
// versions of it are compared by, and what adding it needs.
type Entry[S comparable, V any] struct {
	Key   string
	State S
	Value V
}

// Ops change the server. Every func but Add may be nil.
type Ops[S comparable, V any] struct {
	// Changing is called once, before the first change of a sync that
	// changes anything (the server's lists are about to differ).
	Changing func()
	// Remove stops serving keys, in key order.
	Remove func(keys ...string)
	// Add serves e, replacing what e.Key served. An error leaves e out of
	// the served set; the server is then told to remove e.Key if it served
	// an older version, so that no stale entry stays listed.
	Add func(e Entry[S, V]) error
	// Duplicate is told of an entry whose key an earlier one of the same
	// sync has: the first is served.
	Duplicate func(e Entry[S, V])
}

// Set is what is served, by key. It is not safe for concurrent use: the
// caller serializes its syncs.
type Set[S comparable, V any] struct {
	ops    Ops[S, V]
	served map[string]S
}

// New returns an empty served set changed through ops.
func New[S comparable, V any](ops Ops[S, V]) *Set[S, V] {
	return &Set[S, V]{ops: ops, served: map[string]S{}}
}

// Served is the state of each served entry, by key; the map is the set's
// own and is replaced, never changed, by Sync: the caller may keep it.
func (s *Set[S, V]) Served() map[string]S { return s.served }

// Result is what a Sync did.
type Result struct {
	// Added counts the entries added or replaced, Removed those removed
	// (a replacement that failed counts as removed).
	Added, Removed int
}

// Changed reports whether the served set changed.
func (r Result) Changed() bool { return r.Added > 0 || r.Removed > 0 }

// Sync makes want, in its order, the served set: the keys no longer
// wanted are removed, then the new and changed entries added. Of entries
// with one key, the first is served.
func (s *Set[S, V]) Sync(want []Entry[S, V]) Result {
	next := make(map[string]S, len(want))
	var add []Entry[S, V]
	for _, e := range want {
		if _, dup := next[e.Key]; dup {
			if s.ops.Duplicate != nil {
				s.ops.Duplicate(e)
			}
			continue
		}
		next[e.Key] = e.State
		if cur, ok := s.served[e.Key]; ok && cur == e.State {
			continue
		}
		add = append(add, e)
	}
	var remove []string
	for key := range s.served {
		if _, ok := next[key]; !ok {
			remove = append(remove, key)
		}
	}
	sort.Strings(remove)
	var r Result
	if len(add)+len(remove) > 0 && s.ops.Changing != nil {
		s.ops.Changing()
	}
	if len(remove) > 0 {
		s.remove(remove...)
	}
	r.Removed = len(remove)
	for _, e := range add {
		if err := s.ops.Add(e); err != nil {
			delete(next, e.Key)
			if _, had := s.served[e.Key]; had {
				s.remove(e.Key)
				r.Removed++
			}
			continue
		}
		r.Added++
	}
	s.served = next
	return r
}

func (s *Set[S, V]) remove(keys ...string) {
	if s.ops.Remove != nil {
		s.ops.Remove(keys...)
	}
}
