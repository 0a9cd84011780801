package host

import (
	"context"
	"errors"
)

// errUnimplemented marks API the host core issue is still writing.
var errUnimplemented = errors.New("host: unimplemented")

// Host runs the instances of a composition. It is safe for concurrent use.
type Host struct {
	opts Options
}

// instance is one running (or pending, failed, disabled) composition entry.
type instance struct {
	entry Entry
	scope *Scope
}

// New returns a host with no instances. Nil options mean defaults.
func New(opts *Options) *Host {
	h := &Host{}
	if opts != nil {
		h.opts = *opts
	}
	return h
}

// Apply reconciles the running instances with c by id: added entries start,
// removed ones are disposed, changed ones (plugin, config or disabled) are
// disposed and started again, unchanged ones are not touched. Built-in
// plugins missing from c are added. An invalid c changes nothing and returns
// every problem found. Apply returns once every started instance has settled
// (active, failed or pending); an instance's failure is in Status, not in the
// returned error.
func (h *Host) Apply(ctx context.Context, c *Composition) error { return errUnimplemented }

// LoadFile reads, validates and applies the composition at path.
func (h *Host) LoadFile(ctx context.Context, path string) error { return errUnimplemented }

// Watch applies path now and again whenever it changes on disk (debounced;
// editors that save by rename are followed) or Reload is called, until ctx
// is done. A file that fails to parse or validate changes nothing and is
// logged with its file and line.
func (h *Host) Watch(ctx context.Context, path string) error { return errUnimplemented }

// Reload asks a running Watch to re-read its file (what SIGHUP does).
func (h *Host) Reload() {}

// Status returns a snapshot of every instance, in composition order.
func (h *Host) Status() []InstanceStatus { return nil }

// OnStatus calls fn whenever an instance changes state. The returned func
// removes fn.
func (h *Host) OnStatus(fn func(InstanceStatus)) (remove func()) { return func() {} }

// Shutdown disposes every instance, dependents first, each bounded by
// Options.DisposeTimeout. It returns an error if any dispose timed out.
func (h *Host) Shutdown(ctx context.Context) error { return errUnimplemented }

// ReadComposition reads and parses the composition file at path, expanding
// ${VAR} and ${VAR:-default} with lookupEnv (os.LookupEnv if nil).
func ReadComposition(path string, lookupEnv func(string) (string, bool)) (*Composition, error) {
	return nil, errUnimplemented
}

// ParseComposition parses composition YAML; file names it in errors.
func ParseComposition(file string, data []byte, lookupEnv func(string) (string, bool)) (*Composition, error) {
	return nil, errUnimplemented
}

// Check validates c without starting anything: unique ids, known plugin
// names, every entry's config decoded strictly and validated, no service
// cycles. It returns every problem, each naming file:line and entry id.
func Check(c *Composition) error { return errUnimplemented }

// Plugins lists the registered plugins, sorted by name.
func Plugins() []PluginInfo { return nil }

// Provide makes v the service k for as long as s lives. Providing a service
// another active instance already provides is an error.
func Provide[T any](s *Scope, k Key[T], v T) error { return errUnimplemented }

// Get returns the injected service k. It panics if the plugin did not
// declare k in Inject (a programmer error); a required service is always
// present while the instance runs.
func Get[T any](s *Scope, k Key[T]) T {
	v, ok := Lookup(s, k)
	if !ok {
		panic("host: service " + k.name + " is not available to " + s.id)
	}
	return v
}

// Lookup returns the injected service k and whether it is present; use it for
// optional injections.
func Lookup[T any](s *Scope, k Key[T]) (T, bool) {
	var zero T
	return zero, false
}

// Service returns the service k as currently provided on h, for code outside
// any plugin (the binary, tests).
func Service[T any](h *Host, k Key[T]) (T, bool) {
	var zero T
	return zero, false
}
