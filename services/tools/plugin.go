package tools

import (
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// Config is the configuration of the built-in `tools` plugin. It has no
// keys yet; a composition entry with id `tools` may only say `config: {}`.
type Config struct{}

func init() {
	host.Register(host.Definition[Config]{
		Name:        "tools",
		Description: "the tool registry: tool definitions, the execute pipeline, prompt assembly",
		Provides:    []host.AnyKey{Key},
		Builtin:     true,
		Apply: func(s *host.Scope, _ Config) error {
			return host.Provide(s, Key, New(&Options{Logger: s.Logger(), Telemetry: telemetry.From(s.Context())}))
		},
	})
}
