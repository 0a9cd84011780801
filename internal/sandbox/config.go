package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Modes of a Config.
const (
	// ModeAuto sandboxes where the system supports it and starts the
	// server unsandboxed, with a warning, where it does not.
	ModeAuto = "auto"
	// ModeStrict refuses to start a server it cannot sandbox.
	ModeStrict = "strict"
	// ModeOff starts the server with the user's rights.
	ModeOff = "off"
)

// DefaultMode is the mode of an entry without sandbox.mode: sandboxed
// where the system supports it.
const DefaultMode = ModeAuto

// Config is the sandbox key of a stdio entry: what the server may do
// beyond what it needs to run (defaults.go).
type Config struct {
	// Mode is auto, strict or off; unset, it is auto when the block
	// grants anything (asking for grants is asking for the sandbox), else
	// DefaultMode.
	Mode string `yaml:"mode"`
	// Read and Write are absolute paths (or ~/...) the server may read,
	// and read and write, besides the defaults.
	Read  []string `yaml:"read"`
	Write []string `yaml:"write"`
	// Connect and Bind are the TCP ports the server may connect to and
	// listen on: none by default, or any.
	Connect Ports `yaml:"connect"`
	Bind    Ports `yaml:"bind"`
	// UDP lets the server use UDP (DNS lookups among others). Unset, it
	// follows Connect: a server that may connect somewhere over TCP needs
	// to resolve the names it connects to, and could send anything over
	// TCP anyway; one that may connect nowhere cannot send DNS queries
	// out either (seccomp.go).
	UDP *bool `yaml:"udp"`
	// Unix lets the server create unix sockets, and so connect to any it
	// can reach by path (a Docker socket, D-Bus); socketpair between its
	// own processes is allowed without it.
	Unix bool `yaml:"unix"`
	// Limits are its resource limits (limits.go).
	Limits Limits `yaml:"limits"`
}

// AllowsUDP reports whether the server may use UDP: the key, or unset,
// whether it may connect over TCP.
func (c Config) AllowsUDP() bool {
	if c.UDP != nil {
		return *c.UDP
	}
	return c.Connect.Any || len(c.Connect.List) > 0
}

// EffectiveMode is the mode c runs under.
func (c Config) EffectiveMode() string {
	switch {
	case c.Mode != "":
		return c.Mode
	case c.Set():
		return ModeAuto
	}
	return DefaultMode
}

// Set reports whether any key besides mode was given.
func (c Config) Set() bool {
	return len(c.Read) > 0 || len(c.Write) > 0 || c.Connect.Any || len(c.Connect.List) > 0 || c.Bind.Any || len(c.Bind.List) > 0 ||
		c.UDP != nil || c.Unix || c.Limits.Set()
}

// Ports is a list of TCP ports, or any port.
type Ports struct {
	Any  bool
	List []uint16
}

// String words p for a report: "none", "any" or "443, 8080".
func (p Ports) String() string {
	if p.Any {
		return "any"
	}
	if len(p.List) == 0 {
		return "none"
	}
	s := make([]string, len(p.List))
	for i, v := range p.List {
		s[i] = strconv.Itoa(int(v))
	}
	return strings.Join(s, ", ")
}

// MarshalYAML encodes p as UnmarshalYAML reads it: "any" or a list.
func (p Ports) MarshalYAML() (any, error) {
	if p.Any {
		return "any", nil
	}
	if p.List == nil {
		return []uint16{}, nil
	}
	return p.List, nil
}

// UnmarshalYAML decodes a list of ports (1 to 65535) or the string "any".
func (p *Ports) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*p = Ports{}
			return nil
		}
		if n.Value == "any" {
			*p = Ports{Any: true}
			return nil
		}
		return fmt.Errorf("%q must be a list of TCP ports such as [443], [] for none, or \"any\"", n.Value)
	case yaml.SequenceNode:
		out := Ports{List: make([]uint16, 0, len(n.Content))}
		for i, c := range n.Content {
			v, err := strconv.Atoi(c.Value)
			if c.Kind != yaml.ScalarNode || err != nil || v < 1 || v > 65535 {
				return fmt.Errorf("[%d]: %q is not a TCP port (1 to 65535); write \"any\" instead of the list to allow every port", i, c.Value)
			}
			out.List = append(out.List, uint16(v))
		}
		*p = out
		return nil
	}
	return errors.New("must be a list of TCP ports such as [443], [] for none, or \"any\"")
}

// KeyError is a problem with one key of the sandbox block, named by its
// path under the block ("mode", "read[1]").
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return "sandbox." + e.Key + ": " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// Validate returns every problem of c, each a *KeyError.
func (c Config) Validate() []error {
	var errs []error
	switch c.Mode {
	case "", ModeAuto, ModeStrict, ModeOff:
	default:
		errs = append(errs, &KeyError{"mode", fmt.Errorf("%q must be auto, strict or off", c.Mode)})
	}
	paths := func(key string, list []string) {
		for i, p := range list {
			if !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
				errs = append(errs, &KeyError{fmt.Sprintf("%s[%d]", key, i), fmt.Errorf("%q must be an absolute path or start with ~/", p)})
			} else if p == "/" {
				errs = append(errs, &KeyError{fmt.Sprintf("%s[%d]", key, i), errors.New(`"/" would grant the whole filesystem; name the directories the server needs, or set mode: off`)})
			}
		}
	}
	paths("read", c.Read)
	paths("write", c.Write)
	return append(errs, c.Limits.validate()...)
}

// expand returns p with a leading ~ made home, cleaned.
func expand(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return filepath.Clean(p)
}
