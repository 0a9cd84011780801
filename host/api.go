package host

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	yamlv3 "go.yaml.in/yaml/v3"
)

// State is where an instance is in its life.
type State string

const (
	StatePending  State = "pending"  // waiting for a required service
	StateStarting State = "starting" // apply is running
	StateActive   State = "active"
	StateFailed   State = "failed"
	StateDisabled State = "disabled"
)

// InstanceStatus is one instance in a Status snapshot.
type InstanceStatus struct {
	ID     string
	Plugin string
	State  State
	Since  time.Time
	Err    string // the failure, or what a pending instance waits for
	Detail string // what the instance last said of itself (Scope.SetDetail)
	// Kept is set while an active instance runs its previous config
	// because the entry's new one failed: "kept the previous config: the
	// new one failed: …". A later edit of the entry tries again.
	Kept string `json:",omitempty"`

	// The fields below are for a front end to read instead of parsing
	// Detail, which is for people.

	// Endpoint is the URL the instance serves at, such as the gateway's
	// "http://127.0.0.1:8931/mcp"; "" when it listens nowhere
	// (Scope.SetEndpoint).
	Endpoint string `json:",omitempty"`
	// Lazy says the instance starts its work on its first use rather than
	// when it starts (an MCP server with startup: lazy): known from its
	// config (Definition.Lazy) before it starts, so that a front end
	// waits for nothing.
	Lazy bool `json:",omitempty"`
	// Dormant says an active instance has its work stopped until a call
	// wakes it: a lazy server before its first call, a server stopped
	// after idle (Scope.SetDormant).
	Dormant bool `json:",omitempty"`
	// LastError is the last failure of a running instance that it retries
	// or recovers from on its own (a lost connection), "" once it has
	// (Scope.SetLastError). Err is the instance's own failure.
	LastError string `json:",omitempty"`
	// Sandbox says in a few words how the instance's child processes are
	// confined (Scope.SetSandbox); "" when it starts none or does not say.
	Sandbox string `json:",omitempty"`
	// Transport is how the instance reaches its MCP server: "stdio",
	// "streamable-http" or "sse" (Scope.SetTransport); "" for an
	// in-process plugin.
	Transport string `json:",omitempty"`
	// Reconnects counts the instance's connection attempts after a failed
	// start or a lost connection since its run started
	// (Scope.SetReconnects); a restart or a changed config starts over.
	Reconnects int `json:",omitempty"`
	// Stderr are the last lines the instance's child process wrote to
	// stderr (Scope.SetStderr), for a person reading why it failed.
	Stderr []string `json:",omitempty"`
	// Claims are the names the instance holds (Definition.Claims), from
	// the config it runs, or failed with: a failed instance's are known
	// too, so that a tool of it can be traced to it (Owner).
	Claims []Claim `json:",omitempty"`
}

// Options configures a Host. The zero value (or nil) means defaults.
type Options struct {
	// Logger receives the host's and every instance's logs.
	Logger *slog.Logger
	// Context carries values every instance's scope context carries too.
	// Only its values count: its cancellation or deadline ends nothing
	// (Shutdown does).
	Context context.Context
	// Metrics is the process's Prometheus registry (nil: the host makes
	// one): the host's own metrics go there, and Host.Gatherer serves it
	// with every run's series (Scope.Registerer).
	Metrics *prometheus.Registry
	// Tracing gives the instances' tracers (Scope.Tracer); nil or a no-op
	// provider means no traces.
	Tracing trace.TracerProvider
	// DisposeTimeout bounds the dispose of one instance (default 10s).
	DisposeTimeout time.Duration
	// ReadyTimeout bounds how long the host waits, after Apply returned,
	// for an instance whose plugin reports readiness (default
	// DefaultReadyTimeout); past it the instance counts as failed to start.
	// The plugin's own bound (an MCP client's startupTimeoutMs) usually
	// ends the wait first.
	ReadyTimeout time.Duration
	// DrainTimeout bounds how long an instance replaced by an overlapping
	// one is left to finish its calls in flight before it is disposed
	// (default DefaultDrainTimeout).
	DrainTimeout time.Duration
	// LookupEnv resolves ${VAR} in the composition (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Debounce is how long Watch waits for a file to stop changing before
	// reading it (default DefaultDebounce, 100ms).
	Debounce time.Duration
	// DebounceMax bounds how long a stream of changes may postpone a
	// reload, counted from the first change not yet read (default
	// DefaultDebounceMax, 1s): a file rewritten without pause, by a tool
	// that saves every few milliseconds, is still read.
	DebounceMax time.Duration
	// Entries are instances the host runs besides the composition's, as
	// for the built-in plugins: each is added unless the composition lists
	// its id, in which case the composition's entry wins; one with a
	// built-in plugin's id configures it. A front end that needs an
	// instance of its own (`dsh-host serve` and its gateway) declares it
	// here, so that it is reconciled, watched and shut down like any
	// entry. File names where an entry comes from in messages ("(command
	// line)").
	Entries []Entry
}

// Entry is one instance in a composition.
type Entry struct {
	ID       string
	Name     string
	Disabled bool
	// Config is the entry's config after ${VAR} expansion, as generic YAML
	// values (maps, slices, scalars): what a reload compares. An entry
	// built in code sets only Config; one parsed from a file is decoded
	// from its YAML node, so changing Config there changes nothing.
	Config map[string]any
	// File and Line locate the entry, for error messages.
	File string
	Line int

	// config is the expanded config node of a parsed entry, or nil. Its
	// lines are the file's, so config errors point at the key.
	config *yamlv3.Node
}

// Composition is a parsed, expanded composition file.
type Composition struct {
	File    string
	Entries []Entry
}

// PluginInfo describes a registered plugin for listings.
type PluginInfo struct {
	Name        string
	Description string
	Builtin     bool
	Inject      []Dep
	Provides    []string
	Fields      []ConfigField
}

// ConfigField is one key of a plugin's config.
type ConfigField struct {
	Key     string // dotted path, e.g. "reconnect.maxAttempts"
	Type    string
	Default string
}
