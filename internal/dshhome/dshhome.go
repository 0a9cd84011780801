// Package dshhome resolves the user's dsh data directory, $DSH_HOME.
package dshhome

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvVar is the environment variable that overrides the data directory.
const EnvVar = "DSH_HOME"

// Dir returns the user's dsh data directory: $DSH_HOME when set and not
// empty, else ~/.dsh. The result is cleaned but not created; a relative
// $DSH_HOME is made absolute against the working directory so that every
// service resolves the same place.
func Dir() (string, error) {
	if d := os.Getenv(EnvVar); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("resolve %s=%q: %w", EnvVar, d, err)
		}
		return abs, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory for ~/.dsh (set %s instead): %w", EnvVar, err)
	}
	return filepath.Join(home, ".dsh"), nil
}

// Path returns name joined to Dir, e.g. Path("settings.yaml").
func Path(name ...string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{d}, name...)...), nil
}

// Default returns name under Dir, or "" when Dir cannot be resolved; it is
// the default of a config key that names a file or directory (CheckPath
// then says why it is empty).
func Default(name string) string {
	p, _ := Path(name)
	return p
}

// CheckPath reports an empty path, naming the config key: either no
// default could be resolved (the error says why), or the composition set
// it empty.
func CheckPath(key, path string) error {
	if path != "" {
		return nil
	}
	if _, err := Dir(); err != nil {
		return fmt.Errorf("%s: not set and no default: %w", key, err)
	}
	return fmt.Errorf("%s: must not be empty; give a path, or remove the key for the default under $%s", key, EnvVar)
}
