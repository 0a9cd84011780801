// Package homepath is what the built-in services that keep a file or a
// directory under $DSH_HOME share: the default path and the check of the
// config key that overrides it.
package homepath

import (
	"fmt"

	"github.com/dsh-host/dsh-host/internal/dshhome"
)

// Default returns name under $DSH_HOME, or "" when $DSH_HOME cannot be
// resolved (Check then says why).
func Default(name string) string {
	p, _ := dshhome.Path(name)
	return p
}

// Check reports an empty path, naming the config key: either no default
// could be resolved (the error says why), or the composition set it empty.
func Check(key, path string) error {
	if path != "" {
		return nil
	}
	if _, err := dshhome.Dir(); err != nil {
		return fmt.Errorf("%s: not set and no default: %w", key, err)
	}
	return fmt.Errorf("%s: must not be empty; give a path, or remove the key for the default under $%s", key, dshhome.EnvVar)
}
