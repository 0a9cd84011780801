// Package cli is the flag handling every dsh-host subcommand shares: a
// flag set whose help ends with the shared exit codes, parsing that allows
// flags after positional arguments, a flag taking one of fixed values, the
// flags of a command reading a composition, and flags the environment can
// give. It prints only help and usage errors; the command prints the rest.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes shared by every subcommand.
const (
	ExitOK    = 0 // success
	ExitFail  = 1 // failure, tool error, invalid composition
	ExitUsage = 2 // bad flags or arguments
)

// CommonFlags are the flags every subcommand that reads a composition takes.
type CommonFlags struct {
	File      string
	LogFormat string
	LogLevel  string
}

// Register adds -c, --log-format and --log-level to fs. Long-running
// subcommands log at info by default; one-shot ones at warn, so that their
// output is not drowned. A value outside the choices is a usage error at
// parse time, like any bad flag.
func (c *CommonFlags) Register(fs *flag.FlagSet, defaultLevel string) {
	fs.StringVar(&c.File, "c", "composition.yml", "composition `file`")
	c.LogFormat, c.LogLevel = "text", defaultLevel
	fs.Var(Choice{&c.LogFormat, []string{"text", "json"}}, "log-format", "log `format`: text or json (logs go to stderr)")
	fs.Var(Choice{&c.LogLevel, []string{"debug", "info", "warn", "error"}}, "log-level", "log `level`: debug, info, warn or error")
}

// Choice is a string flag that takes one of a fixed set of values.
type Choice struct {
	Value   *string
	Allowed []string
}

func (c Choice) String() string {
	if c.Value == nil { // the zero value flag.PrintDefaults makes
		return ""
	}
	return *c.Value
}

func (c Choice) Set(s string) error {
	for _, a := range c.Allowed {
		if strings.EqualFold(s, a) {
			*c.Value = a
			return nil
		}
	}
	return fmt.Errorf("want %s", strings.Join(c.Allowed, ", "))
}

// FlagSet returns a flag set for subcommand name whose help shows synopsis,
// about, the flags and the exit codes every subcommand shares.
func FlagSet(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("dsh-host "+name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: dsh-host %s %s\n\n%s\n", name, synopsis, strings.TrimSpace(about))
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
		fmt.Fprintln(w, "\nExit codes: 0 success, 1 failure, 2 usage error.")
	}
	return fs
}

// ParseFlags is ParseArgs for a subcommand that takes no positional
// arguments: any is a usage error.
func ParseFlags(fs *flag.FlagSet, args []string, out, errw io.Writer) (code int, ok bool) {
	pos, code, ok := ParseArgs(fs, args, out, errw)
	if ok && len(pos) > 0 {
		return UsageError(fs, errw, "unexpected arguments %q", pos), false
	}
	return code, ok
}

// ParseArgs parses args with fs, allowing flags after positional arguments
// (`call echo '{}' --json`); everything after a literal "--" is positional.
// When it returns ok false, the caller exits with code: help was printed to
// out (0), or a usage error to errw (2).
func ParseArgs(fs *flag.FlagSet, args []string, out, errw io.Writer) (positional []string, code int, ok bool) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	fs.SetOutput(errw)
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(out)
			usage()
			return nil, ExitOK, false
		}
		if err != nil {
			fmt.Fprintln(errw)
			usage()
			return nil, ExitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return append(positional, tail...), ExitOK, true
}

// UsageError prints msg and the subcommand's help to errw and returns
// ExitUsage.
func UsageError(fs *flag.FlagSet, errw io.Writer, format string, args ...any) int {
	fmt.Fprintf(errw, "%s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.SetOutput(errw)
	fs.Usage()
	return ExitUsage
}
