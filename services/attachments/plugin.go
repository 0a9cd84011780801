package attachments

import (
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/dshhome"
)

// Config is the config of the built-in `attachments` plugin. Zero limits
// take the defaults.
type Config struct {
	// Dir is the store's directory (default $DSH_HOME/attachments); a
	// relative one is taken from the working directory.
	Dir string `yaml:"dir"`
	// MaxImageBytes bounds one image (default 3.5 MiB).
	MaxImageBytes int64 `yaml:"maxImageBytes"`
	// MaxImages bounds the images of one batch (default 20).
	MaxImages int `yaml:"maxImages"`
	// MaxBatchBytes bounds the bytes of one batch (default 100 MiB).
	MaxBatchBytes int64 `yaml:"maxBatchBytes"`
	// MaxPixels bounds width*height (default 40,000,000).
	MaxPixels int64 `yaml:"maxPixels"`
	// MaxSide bounds the width and the height (default 2000).
	MaxSide int `yaml:"maxSide"`
}

// Limits returns the config's limits.
func (c *Config) Limits() Limits {
	return Limits{
		MaxImageBytes: c.MaxImageBytes,
		MaxImages:     c.MaxImages,
		MaxBatchBytes: c.MaxBatchBytes,
		MaxPixels:     c.MaxPixels,
		MaxSide:       c.MaxSide,
	}
}

// DefaultConfig returns the config an `attachments` entry starts from: the
// directory under $DSH_HOME (empty if it cannot be resolved; Validate then
// says why) and the default limits.
func DefaultConfig() Config {
	d := DefaultLimits()
	return Config{
		Dir:           dshhome.Default("attachments"),
		MaxImageBytes: d.MaxImageBytes,
		MaxImages:     d.MaxImages,
		MaxBatchBytes: d.MaxBatchBytes,
		MaxPixels:     d.MaxPixels,
		MaxSide:       d.MaxSide,
	}
}

// ValidateConfig checks c, naming the offending key.
func ValidateConfig(c *Config) error {
	if err := dshhome.CheckPath("dir", c.Dir); err != nil {
		return err
	}
	l := c.Limits()
	return l.Validate()
}

func init() {
	host.Register(host.Definition[Config]{
		Name:        "attachments",
		Description: "durable, content-addressed image store (all-or-nothing batches)",
		Provides:    []host.AnyKey{Key},
		Builtin:     true,
		Defaults:    DefaultConfig,
		Validate:    ValidateConfig,
		Apply: func(s *host.Scope, cfg Config) error {
			l := cfg.Limits()
			st, err := New(cfg.Dir, &l)
			if err != nil {
				return err
			}
			if err := host.Provide(s, Key, st); err != nil {
				return err
			}
			s.SetDetail(st.Dir())
			return nil
		},
	})
}
