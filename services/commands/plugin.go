package commands

import (
	"context"
	"strings"

	"github.com/dsh-host/dsh-host/host"
)

// Config is the commands plugin's config; it has no keys.
type Config struct{}

func init() {
	host.Register(host.Definition[Config]{
		Name:        "commands",
		Description: "slash commands that plugins register and front ends run",
		Builtin:     true,
		Provides:    []host.AnyKey{Key},
		Apply: func(s *host.Scope, _ Config) error {
			r := New()
			r.instances = s.Instances
			if _, err := r.Register(s, completeCommand(r)); err != nil {
				return err
			}
			return host.Provide(s, Key, r)
		},
	})
}

// completeCommand is /complete: the completion of a line typed so far, for
// front ends without a completion key (a line console, `dsh-host command`).
func completeCommand(r *Registry) Command {
	return Command{
		Name:        "complete",
		Description: "suggest completions for a command line typed so far: command names, or an argument's values (MCP prompt and template arguments)",
		Usage:       "/<command> [input]",
		Handler: Func(func(ctx context.Context, input string) (string, error) {
			if input == "" {
				input = "/"
			}
			list, err := r.Complete(ctx, input)
			if err != nil {
				return "", err
			}
			if len(list) == 0 {
				return "(no completions)", nil
			}
			return strings.Join(list, "\n"), nil
		}),
	}
}
