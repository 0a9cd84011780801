package agent

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Key is the agent service: what front ends (dsh-host chat) run turns on.
var Key = host.NewKey[*Agent]("agent")

// PluginName is the name composition entries use.
const PluginName = "agent"

func init() {
	host.Register(host.Definition[config]{
		Name:        PluginName,
		Description: "a model on an OpenAI-compatible API using the tools (dsh-host chat)",
		Inject: []host.Dep{host.Require(tools.Key), host.Optional(attachments.Key), host.Optional(commands.Key),
			host.Optional(resources.Key), host.Optional(elicit.Key)},
		Provides: []host.AnyKey{Key},
		Defaults: defaults,
		Validate: validate,
		// One agent per host: it provides the service and the fixed
		// commands /new, /model, /context and /compact.
		Claims: func(*config) []host.Claim { return []host.Claim{{Kind: "service", Value: "agent"}} },
		// The key never reaches an MCP server's environment.
		Secrets: func(c *config) []string {
			if c.APIKeyEnv == "" {
				return nil
			}
			return []string{c.APIKeyEnv}
		},
		Apply: apply,
	})
}

func apply(s *host.Scope, cfg config) error {
	key := ""
	if cfg.APIKeyEnv != "" {
		key = os.Getenv(cfg.APIKeyEnv)
		if key == "" {
			return fmt.Errorf("apiKeyEnv: %s is not set; export the API key in it (or set apiKeyEnv: \"\" for a server that takes none)", cfg.APIKeyEnv)
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	s.OnDispose("close model connections", func() error { transport.CloseIdleConnections(); return nil })
	store, _ := host.Lookup(s, attachments.Key)
	a := newAgent(s.Context(), cfg, key, host.Get(s, tools.Key), store, &http.Client{Transport: transport})
	a.caller.ID = s.ID()
	if cfg.WorkContext {
		if dir, err := os.Getwd(); err == nil {
			home, _ := os.UserHomeDir()
			a.work = readWorkContext(dir, home, time.Now())
		}
	}
	a.resources, _ = host.Lookup(s, resources.Key)
	a.elicit, _ = host.Lookup(s, elicit.Key)
	if err := host.Provide(s, Key, a); err != nil {
		return err
	}
	if cmds, ok := host.Lookup(s, commands.Key); ok {
		if err := registerCommands(s, cmds, a); err != nil {
			return err
		}
	}
	s.SetDetail(cfg.Model + " at " + cfg.BaseURL)
	return nil
}

func registerCommands(s *host.Scope, cmds *commands.Registry, a *Agent) error {
	if _, err := cmds.Register(s, commands.Command{
		Name:        "new",
		Description: "start a new conversation with the model",
		Handler: commands.Func(func(ctx context.Context, _ string) (string, error) {
			a.conversationIn(ctx).Reset()
			return "new conversation", nil
		}),
	}); err != nil {
		return err
	}
	if err := registerContextCommands(s, cmds, a); err != nil {
		return err
	}
	if err := registerCost(s, cmds, a); err != nil {
		return err
	}
	_, err := cmds.Register(s, commands.Command{
		Name:        "model",
		Description: "show the model, or switch to another",
		Usage:       "[NAME]",
		Handler: commands.Func(func(_ context.Context, in string) (string, error) {
			if in = strings.TrimSpace(in); in != "" {
				if strings.ContainsAny(in, " \t") {
					return "", fmt.Errorf("a model name has no spaces: %q", in)
				}
				if err := retiredModel(in, a.cfg.BaseURL); err != nil {
					return "", err
				}
				a.SetModel(in)
				return "model: " + describe(in) + " (until the agent restarts)", nil
			}
			return "model: " + describe(a.Model()), nil
		}),
	})
	return err
}
