package reconcile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// server records what a Set asks of it.
type server struct {
	log    []string
	served map[string]string
	refuse map[string]bool // keys Add refuses
}

func (s *server) ops() Ops[string, string] {
	return Ops[string, string]{
		Changing: func() { s.log = append(s.log, "changing") },
		Remove: func(keys ...string) {
			s.log = append(s.log, "remove "+strings.Join(keys, ","))
			for _, k := range keys {
				delete(s.served, k)
			}
		},
		Add: func(e Entry[string, string]) error {
			if s.refuse[e.Key] {
				s.log = append(s.log, "refuse "+e.Key)
				return errors.New("refused")
			}
			s.log = append(s.log, "add "+e.Key+"="+e.State)
			s.served[e.Key] = e.Value
			return nil
		},
		Duplicate: func(e Entry[string, string]) { s.log = append(s.log, "duplicate "+e.Key+"="+e.State) },
	}
}

func entries(kv ...string) []Entry[string, string] {
	var out []Entry[string, string]
	for _, x := range kv {
		k, v, _ := strings.Cut(x, "=")
		out = append(out, Entry[string, string]{Key: k, State: v, Value: v})
	}
	return out
}

func TestSync(t *testing.T) {
	tests := []struct {
		name         string
		before, want []string
		refuse       []string
		log          []string
		served       map[string]string
		added, moved int
	}{
		{"empty to empty", nil, nil, nil, nil, map[string]string{}, 0, 0},
		{"first sync", nil, []string{"b=1", "a=1"}, nil,
			[]string{"changing", "add b=1", "add a=1"}, map[string]string{"a": "1", "b": "1"}, 2, 0},
		{"unchanged sends nothing", []string{"a=1", "b=1"}, []string{"b=1", "a=1"}, nil,
			nil, map[string]string{"a": "1", "b": "1"}, 0, 0},
		{"changed state is replaced", []string{"a=1", "b=1"}, []string{"a=2", "b=1"}, nil,
			[]string{"changing", "add a=2"}, map[string]string{"a": "2", "b": "1"}, 1, 0},
		{"removed in key order, before adds", []string{"c=1", "a=1", "b=1"}, []string{"d=1"}, nil,
			[]string{"changing", "remove a,b,c", "add d=1"}, map[string]string{"d": "1"}, 1, 3},
		{"duplicate: the first wins", nil, []string{"a=1", "a=2"}, nil,
			[]string{"duplicate a=2", "changing", "add a=1"}, map[string]string{"a": "1"}, 1, 0},
		{"refused new entry is not served", nil, []string{"a=1", "b=1"}, []string{"a"},
			[]string{"changing", "refuse a", "add b=1"}, map[string]string{"b": "1"}, 1, 0},
		{"refused replacement removes the old one", []string{"a=1"}, []string{"a=2"}, []string{"a"},
			[]string{"changing", "refuse a", "remove a"}, map[string]string{}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &server{served: map[string]string{}, refuse: map[string]bool{}}
			set := New(srv.ops())
			set.Sync(entries(tt.before...))
			srv.log = nil
			for _, k := range tt.refuse {
				srv.refuse[k] = true
			}
			r := set.Sync(entries(tt.want...))
			if !reflect.DeepEqual(srv.log, tt.log) {
				t.Errorf("calls %q, want %q", srv.log, tt.log)
			}
			if !reflect.DeepEqual(srv.served, tt.served) {
				t.Errorf("server serves %v, want %v", srv.served, tt.served)
			}
			if !reflect.DeepEqual(set.Served(), tt.served) {
				t.Errorf("Served() = %v, want %v", set.Served(), tt.served)
			}
			if r.Added != tt.added || r.Removed != tt.moved || r.Changed() != (tt.added+tt.moved > 0) {
				t.Errorf("result %+v, want added %d removed %d", r, tt.added, tt.moved)
			}
		})
	}
}

// TestServedIsKept: the map Served returns is not changed by a later Sync.
func TestServedIsKept(t *testing.T) {
	srv := &server{served: map[string]string{}}
	set := New(srv.ops())
	set.Sync(entries("a=1"))
	kept := set.Served()
	set.Sync(entries("b=1"))
	if !reflect.DeepEqual(kept, map[string]string{"a": "1"}) {
		t.Errorf("kept %v", kept)
	}
}

// TestOptionalOps: a Set with Add alone works.
func TestOptionalOps(t *testing.T) {
	n := 0
	set := New(Ops[int, struct{}]{Add: func(Entry[int, struct{}]) error { n++; return nil }})
	set.Sync([]Entry[int, struct{}]{{Key: "a", State: 1}, {Key: "a", State: 2}})
	if r := set.Sync(nil); r.Removed != 1 || n != 1 {
		t.Errorf("%+v, %d adds", r, n)
	}
}
