package host

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Definition describes a plugin: its name in the composition, the services it
// injects and provides, its typed config and its apply function. Register it
// once, from the plugin package's init.
type Definition[C any] struct {
	// Name is what composition entries name in their `name:` key.
	Name string
	// Description is one line for `dsh-host plugins`.
	Description string
	// Inject lists the services the plugin uses (Require or Optional). An
	// instance starts only once every required service is active.
	Inject []Dep
	// Provides lists the services an instance provides with Provide; the host
	// orders startup and detects cycles from it.
	Provides []AnyKey
	// Builtin makes the host add an instance with id == Name when the
	// composition does not list that id (the built-in services).
	Builtin bool
	// Defaults returns the config before the entry's values are decoded over
	// it. Nil means the zero C.
	Defaults func() C
	// Validate checks a decoded config before any running instance is
	// touched, and may normalise it. A *KeyError (KeyErrorf) names the key
	// it refuses, and the error points at that key's line; errors.Join
	// reports several. It may read what is local and read-only (a time
	// zone's file, whether a path exists) but starts nothing and connects
	// nowhere: that is Apply's, on the scope.
	Validate func(cfg *C) error
	// Claims lists the names an instance with cfg holds exclusively in the
	// host: an MCP client's serverName, a tool name the plugin registers
	// whatever the config. Two enabled entries that claim the same name are
	// a config error naming both (dsh-host check reports it before
	// anything runs), and an instance holds its claims while it runs.
	Claims func(cfg *C) []Claim
	// Secrets names the environment variables that hold cfg's secrets (a
	// bearer token the instance checks). While an enabled entry names a
	// variable, no instance passes it to a child process it starts: the
	// host leaves it out of Scope.Environ, from the update that adds the
	// entry on, before any instance of that update starts.
	Secrets func(cfg *C) []string
	// Lint returns what is likely wrong in a cfg that validates (a rule
	// that can match nothing), given the names every enabled entry of the
	// composition claims (Claims); dsh-host check prints the warnings and
	// does not fail. Nil: none.
	Lint func(cfg *C, claims []Claim) []LintWarning
	// Lazy says an instance with cfg starts its work on its first use,
	// not when Apply runs (an MCP server with startup: lazy): Status
	// reports it from the start (InstanceStatus.Lazy), so that a front end
	// showing progress waits for nothing. Nil: never.
	Lazy func(cfg *C) bool
	// Apply starts an instance. Everything it registers on s is undone when
	// the instance is disposed, or at once if Apply returns an error.
	Apply func(s *Scope, cfg C) error
	// ReportsReady says an instance tells the host when it is ready, or
	// has failed, after Apply returned: Scope.Ready or Scope.Fail (an MCP
	// client is ready once its tools are registered). The host waits for
	// that, bounded by Options.ReadyTimeout, before it swaps a changed
	// entry to the new instance or lets instances that inject its services
	// start. Without it an instance is ready when Apply returns.
	ReportsReady bool
	// Overlap says two instances of one entry may run side by side: an
	// edit starts the new instance beside the old one, whose registrations
	// stay visible until the new one is ready (Scope.Staged); then the new
	// one's replace them in one step, the claims move to it, and the old
	// one is disposed once its calls in flight end (Scope.Enter). A new
	// instance that fails leaves the old one running untouched. Without
	// it, a changed entry is disposed, then started again, and restored
	// with its previous config when the new one fails. A plugin with
	// Overlap provides no service: two providers of one service cannot
	// overlap.
	Overlap bool
}

// Claim is a name one instance holds exclusively within a host.
type Claim struct {
	// Kind is what the name is ("serverName", "tool"); names of different
	// kinds never clash.
	Kind  string
	Value string
	// Key is the config key the name comes from ("serverName"), for the
	// line in error messages; empty for a name the plugin fixes.
	Key string
	// ToolPrefix, when set, says every tool whose name starts with it is
	// the instance's ("mcp__github__" for the MCP server github), even
	// while the instance has failed and registers none (Owner). A claim
	// of Kind "tool" owns the tool of its Value.
	ToolPrefix string
}

// plugin is a registered Definition with its config type erased.
type plugin struct {
	name        string
	description string
	inject      []Dep
	provides    []string
	builtin     bool
	// reportsReady and overlap are the Definition's ReportsReady and Overlap.
	reportsReady bool
	overlap      bool
	configType   reflect.Type
	// newConfig returns a pointer to a fresh config holding the defaults.
	newConfig func() any
	// validate, claims and apply take the pointer newConfig returned;
	// validate and claims turn a panic into an error.
	validate func(cfg any) error
	claims   func(cfg any) ([]Claim, error)
	secrets  func(cfg any) ([]string, error)
	lint     func(cfg any, claims []Claim) ([]LintWarning, error) // nil without Definition.Lint
	lazy     func(cfg any) (bool, error)
	apply    func(s *Scope, cfg any) error
}

// guard runs a plugin's func, turning a panic into an error: a plugin's
// bug must not take the host down while it checks a composition.
func guard(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v", what, r)
		}
	}()
	return f()
}

var (
	pluginsMu sync.RWMutex
	plugins   = map[string]*plugin{}
	// byName is plugins sorted by name, rebuilt at each Register (an
	// init-time event) so that every plan does not sort them again.
	byName []*plugin
)

var pluginName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Register adds a plugin to the process-wide registry. It panics on a
// programmer error: an invalid or duplicate name, a missing Apply, or a
// service injected twice or both injected and provided.
func Register[C any](d Definition[C]) {
	if !pluginName.MatchString(d.Name) {
		panic(fmt.Sprintf("host: plugin name %q must match %s", d.Name, pluginName))
	}
	if d.Apply == nil {
		panic(fmt.Sprintf("host: plugin %q has no Apply", d.Name))
	}
	p := &plugin{
		name:         d.Name,
		description:  d.Description,
		inject:       append([]Dep(nil), d.Inject...),
		builtin:      d.Builtin,
		reportsReady: d.ReportsReady,
		overlap:      d.Overlap,
		configType:   reflect.TypeFor[C](),
		newConfig: func() any {
			c := new(C)
			if d.Defaults != nil {
				*c = d.Defaults()
			}
			return c
		},
		validate: func(cfg any) error {
			if d.Validate == nil {
				return nil
			}
			return guard("Validate", func() error { return d.Validate(cfg.(*C)) })
		},
		claims: func(cfg any) (claims []Claim, err error) {
			if d.Claims == nil {
				return nil, nil
			}
			err = guard("Claims", func() error { claims = d.Claims(cfg.(*C)); return nil })
			return claims, err
		},
		secrets: func(cfg any) (names []string, err error) {
			if d.Secrets == nil {
				return nil, nil
			}
			err = guard("Secrets", func() error { names = d.Secrets(cfg.(*C)); return nil })
			return names, err
		},
		lazy: func(cfg any) (lazy bool, err error) {
			if d.Lazy == nil {
				return false, nil
			}
			err = guard("Lazy", func() error { lazy = d.Lazy(cfg.(*C)); return nil })
			return lazy, err
		},
		apply: func(s *Scope, cfg any) error { return d.Apply(s, *cfg.(*C)) },
	}
	if d.Lint != nil {
		p.lint = func(cfg any, claims []Claim) (ws []LintWarning, err error) {
			err = guard("Lint", func() error { ws = d.Lint(cfg.(*C), claims); return nil })
			return ws, err
		}
	}
	for _, k := range d.Provides {
		p.provides = append(p.provides, k.ServiceName())
	}
	if d.Overlap && len(p.provides) > 0 {
		panic(fmt.Sprintf("host: plugin %q both provides services and declares Overlap; a service has one provider at a time", d.Name))
	}
	seen := map[string]bool{}
	for _, dep := range d.Inject {
		if seen[dep.Service] {
			panic(fmt.Sprintf("host: plugin %q injects service %q twice", d.Name, dep.Service))
		}
		seen[dep.Service] = true
		for _, svc := range p.provides {
			if svc == dep.Service {
				panic(fmt.Sprintf("host: plugin %q both injects and provides service %q", d.Name, svc))
			}
		}
	}
	pluginsMu.Lock()
	defer pluginsMu.Unlock()
	if _, dup := plugins[d.Name]; dup {
		panic(fmt.Sprintf("host: plugin %q registered twice", d.Name))
	}
	plugins[d.Name] = p
	i, _ := slices.BinarySearchFunc(byName, d.Name, func(p *plugin, name string) int { return strings.Compare(p.name, name) })
	byName = slices.Insert(slices.Clip(byName), i, p)
}

func lookupPlugin(name string) (*plugin, bool) {
	pluginsMu.RLock()
	defer pluginsMu.RUnlock()
	p, ok := plugins[name]
	return p, ok
}

// registeredPlugins returns the plugins sorted by name; the slice is
// never modified in place.
func registeredPlugins() []*plugin {
	pluginsMu.RLock()
	defer pluginsMu.RUnlock()
	return byName
}
