package cli

import (
	"flag"
	"fmt"
	"strings"
)

// EnvFlag binds a flag to the environment variable that gives its value
// when the command line does not: containers and systemd units configure
// a process through its environment.
type EnvFlag struct {
	Flag, Env string
	// HTTPOnly flags are not taken from the environment under --stdio: a
	// container's environment set for its gateway must not break a
	// `serve --stdio` run in it.
	HTTPOnly bool
}

// BindEnv adds each bound flag's variable to its help line.
func BindEnv(fs *flag.FlagSet, binds []EnvFlag) {
	for _, b := range binds {
		if f := fs.Lookup(b.Flag); f != nil {
			f.Usage += " (env " + b.Env + ")"
		}
	}
}

// FlagsFromEnv sets each bound flag the command line left unset from its
// variable: flags win, and an empty variable counts as unset. With stdio,
// the HTTPOnly ones are left alone. A value the flag refuses is an error
// naming the variable. It returns the variables it took.
func FlagsFromEnv(fs *flag.FlagSet, binds []EnvFlag, getenv func(string) string, stdio bool) ([]string, error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var took []string
	for _, b := range binds {
		v := getenv(b.Env)
		if v == "" || given[b.Flag] || stdio && b.HTTPOnly {
			continue
		}
		if err := fs.Set(b.Flag, v); err != nil {
			return took, fmt.Errorf("environment variable %s=%q (for --%s): %v", b.Env, v, b.Flag, err)
		}
		took = append(took, b.Env)
	}
	return took, nil
}

// EnvHelp lists binds for a subcommand's help.
func EnvHelp(binds []EnvFlag) string {
	var b strings.Builder
	for _, e := range binds {
		fmt.Fprintf(&b, "  %-18s --%s", e.Env, e.Flag)
		if e.HTTPOnly {
			b.WriteString(" (not under --stdio)")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
