package tools

import "github.com/dsh-host/dsh-host/host"

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
			m, err := NewMetrics(s.Registerer())
			if err != nil {
				return err
			}
			return host.Provide(s, Key, New(&Options{Logger: s.Logger(), Tracer: s.Tracer(), Metrics: m}))
		},
	})
}
