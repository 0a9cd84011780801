package commands

import "github.com/dsh-host/dsh-host/host"

// Config is the commands plugin's config; it has no keys.
type Config struct{}

func init() {
	host.Register(host.Definition[Config]{
		Name:        "commands",
		Description: "slash commands that plugins register and front ends run",
		Builtin:     true,
		Provides:    []host.AnyKey{Key},
		Apply: func(s *host.Scope, _ Config) error {
			return host.Provide(s, Key, New())
		},
	})
}
