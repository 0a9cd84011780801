package settings

import (
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/dshhome"
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

func init() {
	host.Register(host.Definition[Config]{
		Name:        "settings",
		Description: "the user settings file, read and updated by section",
		Provides:    []host.AnyKey{Key},
		Builtin:     true,
		Defaults:    DefaultConfig,
		Validate:    ValidateConfig,
		Apply: func(s *host.Scope, cfg Config) error {
			st, err := Open(cfg.File, s.Logger())
			if err != nil {
				return err
			}
			if err := host.Provide(s, Key, st); err != nil {
				return err
			}
			s.SetDetail(st.Path())
			return nil
		},
	})
}
