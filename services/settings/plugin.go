package settings

import (
	"os"
	"path/filepath"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/services/commands"
)

// Config is the config of the built-in `settings` plugin.
type Config struct {
	// File is the settings file (default $DSH_HOME/settings.yaml); a
	// relative one is taken from the working directory.
	File string `yaml:"file"`
}

// DefaultConfig returns the config a `settings` entry starts from; File is
// empty when $DSH_HOME cannot be resolved (ValidateConfig then says why).
func DefaultConfig() Config {
	return Config{File: dshhome.Default("settings.yaml")}
}

// ValidateConfig checks c, naming the offending key.
func ValidateConfig(c *Config) error {
	return dshhome.CheckPath("file", c.File)
}

// ProjectFile is where a project's settings are, relative to the
// directory of the composition file.
const ProjectFile = ".dsh/settings.yaml"

func init() {
	host.Register(host.Definition[Config]{
		Name:        "settings",
		Description: "the user settings file, read and updated by section, under project and environment overrides",
		Inject:      []host.Dep{host.Optional(commands.Key)},
		Provides:    []host.AnyKey{Key},
		Builtin:     true,
		Defaults:    DefaultConfig,
		Validate:    ValidateConfig,
		Apply: func(s *host.Scope, cfg Config) error {
			opts := []Option{WithEnviron(os.Environ())}
			// The project's settings sit beside the composition the host
			// runs, in its .dsh directory; a composition built in code
			// has none.
			if comp := s.CompositionFile(); comp != "" {
				opts = append(opts, WithProject(filepath.Join(filepath.Dir(comp), ProjectFile)))
			}
			st, err := Open(cfg.File, s.Logger(), opts...)
			if err != nil {
				return err
			}
			if cmds, ok := host.Lookup(s, commands.Key); ok {
				if _, err := cmds.Register(s, command(st)); err != nil {
					return err
				}
			}
			if err := host.Provide(s, Key, st); err != nil {
				return err
			}
			s.SetDetail(st.Path())
			return nil
		},
	})
}
