package sandbox

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestLimitsYAML: sizes take binary units or plain bytes; zero, negative,
// overflowing, fractional and wrongly typed values are refused, each
// saying what to write instead; a limit below what any server needs is
// refused by Validate.
func TestLimitsYAML(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want Limits
		err  string
	}{
		{"{memory: 2GiB, processes: 128, files: 4096}", Limits{Memory: 2 << 30, Processes: 128, Files: 4096}, ""},
		{"{memory: 512 MiB}", Limits{Memory: 512 << 20}, ""},
		{"{memory: 1536mib}", Limits{Memory: 1536 << 20}, ""},
		{"{memory: 1048576}", Limits{Memory: 1 << 20}, ""},
		{"{memory: 4194304B}", Limits{Memory: 4 << 20}, ""},
		{"{memory: 1TiB}", Limits{Memory: 1 << 40}, ""},
		{"{}", Limits{}, ""},
		{"{memory: 2GB}", Limits{}, `unknown unit "GB"; write KiB, MiB, GiB or TiB`},
		{"{memory: 2G}", Limits{}, `unknown unit "G"`},
		{"{memory: 1.5GiB}", Limits{}, `unknown unit ".5GiB"`},
		{"{memory: 1.5}", Limits{}, `must be a size such as 512MiB or 2GiB, not "1.5"`},
		{"{memory: 0}", Limits{}, "0 would stop the server from starting at all"},
		{"{memory: 0GiB}", Limits{}, "0 would stop the server from starting at all"},
		{"{memory: -1GiB}", Limits{}, "is negative"},
		{"{memory: -5}", Limits{}, "is negative"},
		{"{memory: 99999999999TiB}", Limits{}, "is too large"},
		{"{memory: 18446744073709551616}", Limits{}, "is too large"},
		{"{memory: GiB}", Limits{}, "is not a size"},
		{"{memory: true}", Limits{}, "must be a size"},
		{"{memory: [1]}", Limits{}, "not a list"},
		{"{memory: }", Limits{}, ""}, // empty: no limit, as the key left out
		{"{processes: 0}", Limits{}, "0 would stop the server"},
		{"{processes: -3}", Limits{}, "-3 is negative"},
		{"{processes: lots}", Limits{}, `must be a whole number, not "lots"`},
		{"{processes: '128'}", Limits{}, `must be a whole number, not "128"`},
		{"{processes: 1.5}", Limits{}, `must be a whole number`},
		{"{files: 99999999999999999999}", Limits{}, "too large"},
		{"{files: 2000000000}", Limits{}, "too large"},
		{"{files: {a: 1}}", Limits{}, "not a map"},
	} {
		var l Limits
		err := yaml.Unmarshal([]byte(tt.src), &l)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil || l != tt.want {
			t.Errorf("%s = %+v, %v; want %+v", tt.src, l, err, tt.want)
		}
	}
	for _, tt := range []struct {
		l    Limits
		want string
	}{
		{Limits{Memory: 512}, "sandbox.limits.memory: 512 bytes is too small for any server to start (at least 1MiB); write a unit, such as 512MiB"},
		{Limits{Files: 3}, "sandbox.limits.files: 3 is too few"},
	} {
		errs := Config{Limits: tt.l}.Validate()
		if len(errs) != 1 || errs[0].Error() != tt.want && !strings.HasPrefix(errs[0].Error(), tt.want) {
			t.Errorf("%+v: Validate = %v, want %q", tt.l, errs, tt.want)
		}
	}
	if s := Size(1536 << 20).String(); s != "1536MiB" {
		t.Errorf("Size.String = %s", s)
	}
}
