package host

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type keyedConfig struct {
	Zone  string `yaml:"zone"`
	Retry struct {
		Max int `yaml:"max"`
	} `yaml:"retry"`
	Args []string `yaml:"args"`
}

func init() {
	Register(Definition[keyedConfig]{
		Name:     "test-keyed",
		Defaults: func() keyedConfig { c := keyedConfig{Zone: "UTC"}; c.Retry.Max = 1; return c },
		Validate: func(c *keyedConfig) error {
			var errs []error
			if c.Zone == "Mars/Base" {
				errs = append(errs, KeyErrorf("zone", "unknown time zone %q", c.Zone))
			}
			if c.Retry.Max < 0 {
				errs = append(errs, KeyErrorf("retry.max", "must not be negative"))
			}
			if len(c.Args) > 1 && c.Args[1] == "" {
				// Wrapped: still placed at the key's line.
				errs = append(errs, fmt.Errorf("args: %w", KeyErrorf("args[1]", "must not be empty")))
			}
			if c.Zone == "" {
				errs = append(errs, errors.New("no zone at all"))
			}
			return errors.Join(errs...)
		},
		Apply: func(*Scope, keyedConfig) error { return nil },
	})
}

// TestValidateKeyError: an error Validate gives with KeyErrorf points at
// the key's line, each of a joined list at its own; an error without a
// key stays at the entry's line.
func TestValidateKeyError(t *testing.T) {
	for _, tt := range []struct {
		name, config string
		want         []string
	}{
		{"one key", "    config:\n      retry: {max: 2}\n      zone: Mars/Base\n",
			[]string{`test.yml:6: entry "k": config key zone: unknown time zone "Mars/Base"`}},
		{"nested keys, joined", "    config:\n      zone: Mars/Base\n      retry:\n        max: -1\n",
			[]string{`test.yml:5: entry "k": config key zone: unknown time zone "Mars/Base"`, `test.yml:7: entry "k": config key retry.max: must not be negative`}},
		{"a wrapped key error, in a list", "    config:\n      args:\n        - a\n        - ''\n",
			[]string{`test.yml:7: entry "k": invalid config: args: args[1]: must not be empty`}},
		{"no key", "    config:\n      zone: ''\n",
			[]string{`test.yml:2: entry "k": invalid config: no zone at all`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(parse(t, "plugins:\n  - id: k\n    name: test-keyed\n"+tt.config))
			var got []string
			if multi, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range multi.Unwrap() {
					got = append(got, e.Error())
				}
			} else if err != nil {
				got = []string{err.Error()}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
			var ke *KeyError
			if len(tt.want) > 0 && tt.name != "no key" && !errors.As(err, &ke) {
				t.Errorf("errors.As(%v, *KeyError) = false; a caller cannot get at the key", err)
			}
		})
	}
}

// TestValidateKeyErrorInCode: an entry built in code has no lines: the
// key error is at the entry's, and still names the key.
func TestValidateKeyErrorInCode(t *testing.T) {
	_, err := Decode[keyedConfig](&Entry{ID: "k", Name: "test-keyed", File: "(command line)", Line: 3, Config: map[string]any{"retry": map[string]any{"max": -1}}})
	want := `(command line):3: entry "k": config key retry.max: must not be negative`
	if err == nil || err.Error() != want {
		t.Errorf("Decode = %v, want %s", err, want)
	}
}
