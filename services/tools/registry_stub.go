package tools

// Stubs: replaced by the implementation in the services issue.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dsh-host/dsh-host/host"
)

var (
	// ErrRefused marks a policy refusal.
	ErrRefused = errors.New("refused")
	// ErrUnknownTool marks a call to a name that is not registered (or not
	// visible to the caller).
	ErrUnknownTool = errors.New("unknown tool")
)

// Options configures a Registry; nil means defaults.
type Options struct{}

// New returns an empty registry.
func New(opts *Options) *Registry { return &Registry{} }

// Register adds def. A name outside ^[A-Za-z0-9_-]{1,64}$ or already taken is
// an error. unregister removes it and is idempotent.
func (r *Registry) Register(def Definition) (unregister func(), err error) {
	panic("unimplemented")
}

// Get returns the definition registered under name.
func (r *Registry) Get(name string) (Definition, bool) { panic("unimplemented") }

// List returns the definitions visible to caller, sorted by name.
func (r *Registry) List(caller Caller) []Definition { panic("unimplemented") }

// Execute runs one call through the pipeline: pre-execute hooks, guards, the
// tool, output validation, render, post-execute hooks. ctx cancels it.
func (r *Registry) Execute(ctx context.Context, caller Caller, name string, args json.RawMessage) Result {
	panic("unimplemented")
}

// OnPreExecute registers a hook for tools whose name matches pattern.
func (r *Registry) OnPreExecute(s *host.Scope, pattern string, fn PreExecuteHook) (remove func()) {
	panic("unimplemented")
}

// OnGuard registers a guard for tools whose name matches pattern.
func (r *Registry) OnGuard(s *host.Scope, pattern string, fn GuardHook) (remove func()) {
	panic("unimplemented")
}

// OnPostExecute registers a hook for tools whose name matches pattern.
func (r *Registry) OnPostExecute(s *host.Scope, pattern string, fn PostExecuteHook) (remove func()) {
	panic("unimplemented")
}

// OnChange follows registrations and unregistrations.
func (r *Registry) OnChange(s *host.Scope, fn func(Change)) (remove func()) {
	panic("unimplemented")
}

// OnAssemble registers a transform of the model-facing assembly; the
// earlier-registered handler is the outer one.
func (r *Registry) OnAssemble(s *host.Scope, fn host.WaterfallHandler[Assembly]) (remove func()) {
	panic("unimplemented")
}

// Assemble returns what the model sees for one request by caller: every
// visible tool sorted by name, then every assemble handler.
func (r *Registry) Assemble(ctx context.Context, caller Caller) (Assembly, error) {
	panic("unimplemented")
}

// ToolsJSON returns the tools as an OpenAI-compatible `tools` array:
// [{"type":"function","function":{"name","description","parameters"}}].
func (a Assembly) ToolsJSON() ([]byte, error) { panic("unimplemented") }
