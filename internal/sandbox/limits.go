package sandbox

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Limits are the resource limits of a sandboxed server, set by the
// launcher before it execs the server (limits_linux.go). Zero is no limit.
type Limits struct {
	// Memory caps the server's data (heap and anonymous memory) as
	// RLIMIT_DATA, not RLIMIT_AS: Node reserves address space for
	// WebAssembly that it never uses, and would not start under AS.
	Memory Size `yaml:"memory"`
	// Processes caps the processes and threads of the server's user as
	// RLIMIT_NPROC: the kernel counts every one the user runs, not only
	// the server's, and never limits root.
	Processes Count `yaml:"processes"`
	// Files caps the open files of each process as RLIMIT_NOFILE.
	Files Count `yaml:"files"`
}

// Set reports whether any limit was given.
func (l Limits) Set() bool { return l.Memory > 0 || l.Processes > 0 || l.Files > 0 }

// Bounds of the limits: below these no server starts, so a smaller value
// is a mistake rather than a wish.
const (
	minMemory = 1 << 20
	minFiles  = 16
	// maxCount is far above what the kernel allows (nr_open, pid_max):
	// a larger number is a typo, refused rather than cut.
	maxCount = 1 << 30
)

// Size is a number of bytes, written with a unit: 512MiB, 2GiB, or plain
// bytes.
type Size uint64

type sizeUnit struct {
	name  string
	shift uint
}

// sizeUnits are the units a Size may be written in, largest first.
func sizeUnits() [5]sizeUnit {
	return [...]sizeUnit{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
}

// String writes s in the largest unit that divides it: "2GiB", "1536MiB".
func (s Size) String() string {
	for _, u := range sizeUnits() {
		if s != 0 && s%(1<<u.shift) == 0 {
			return strconv.FormatUint(uint64(s)>>u.shift, 10) + u.name
		}
	}
	return "0B"
}

// ParseSize reads "2GiB", "512 MiB", "1048576" or "1048576B". Decimal
// units (GB, MB) and bare letters (2G) are refused rather than guessed:
// 2GB and 2GiB differ by 7%.
func ParseSize(v string) (Size, error) {
	s := strings.TrimSpace(v)
	num, unit := s, ""
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	if num == "" {
		return 0, fmt.Errorf("%q is not a size: write a whole number with a unit, such as 512MiB or 2GiB", v)
	}
	shift := uint(0)
	if unit != "" {
		found := false
		for _, u := range sizeUnits() {
			if strings.EqualFold(unit, u.name) {
				shift, found = u.shift, true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("%q: unknown unit %q; write KiB, MiB, GiB or TiB (2GiB, 1536MiB), or a number of bytes", v, unit)
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q is too large", v)
	}
	return Size(n << shift), nil
}

// UnmarshalYAML reads a Size from a string with a unit or an integer of
// bytes; a float, a negative number, a list or a map is an error.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.Tag == "!!float" && !digits(n.Value)) || n.Tag == "!!bool" || n.Tag == "!!null" {
		return fmt.Errorf("must be a size such as 512MiB or 2GiB, not %s", describe(n))
	}
	if strings.HasPrefix(strings.TrimSpace(n.Value), "-") {
		return fmt.Errorf("%q is negative; a size is a whole number with a unit, such as 2GiB", n.Value)
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return err
	}
	if v == 0 {
		return errors.New(noZero)
	}
	*s = v
	return nil
}

// noZero refuses a zero limit: it would stop the server from starting at
// all, and leaving the key out is how to say "no limit".
const noZero = "0 would stop the server from starting at all; leave the key out for no limit"

// Count is a positive whole number: processes, open files.
type Count uint64

// UnmarshalYAML reads a whole number; a string, a float, a negative
// number, a list or a map is an error.
func (c *Count) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" && !(n.Tag == "!!float" && digits(n.Value)) {
		return fmt.Errorf("must be a whole number, not %s", describe(n))
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	switch {
	case err != nil || v > maxCount:
		return fmt.Errorf("%s is too large (at most %d)", n.Value, maxCount)
	case v < 0:
		return fmt.Errorf("%s is negative", n.Value)
	case v == 0:
		return errors.New(noZero)
	}
	*c = Count(v)
	return nil
}

// digits reports whether v is all decimal digits: an integer too large
// for YAML's int, which it tags a float.
func digits(v string) bool {
	return v != "" && strings.Trim(v, "0123456789") == ""
}

// describe names what a YAML node is, for an error.
func describe(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a map"
	case n.Kind != yaml.ScalarNode:
		return "that"
	case n.Tag == "!!null":
		return "empty"
	}
	return fmt.Sprintf("%q", n.Value)
}

// validate returns the problems of l, each a *KeyError under "limits".
// Decoding refuses 0 (Size, Count); a limit below what any server needs
// to start is a mistake too ("memory: 512" is 512 bytes, not MiB).
func (l Limits) validate() []error {
	var errs []error
	if l.Memory > 0 && l.Memory < minMemory {
		errs = append(errs, &KeyError{"limits.memory", fmt.Errorf("%d bytes is too small for any server to start (at least 1MiB); write a unit, such as %dMiB", uint64(l.Memory), uint64(l.Memory))})
	}
	if l.Files > 0 && l.Files < minFiles {
		errs = append(errs, &KeyError{"limits.files", fmt.Errorf("%d is too few for any server to start (at least %d: its standard streams and runtime hold several)", l.Files, minFiles)})
	}
	return errs
}
