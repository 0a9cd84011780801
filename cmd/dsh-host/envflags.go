package main

import (
	"flag"
	"fmt"
	"strings"
)

// envFlag binds a flag to the environment variable that gives its value
// when the command line does not: containers and systemd units configure
// a process through its environment.
type envFlag struct {
	flag, env string
	// httpOnly flags are not taken from the environment under --stdio: a
	// container's environment set for its gateway must not break a
	// `serve --stdio` run in it.
	httpOnly bool
}

// serveEnv are serve's flags that the environment can give. DSH_LOG_LEVEL
// is serveLogLevel's, read apart (an unknown value keeps the default).
var serveEnv = []envFlag{
	{"http", "DSH_SERVE_ADDR", true},
	{"metrics", "DSH_METRICS_ADDR", false},
	{"log-format", "DSH_LOG_FORMAT", false},
	{"drain-timeout", "DSH_DRAIN_TIMEOUT", true},
	{"list-wait", "DSH_LIST_WAIT", false},
	{"token-env", "DSH_TOKEN_ENV", true},
	{"token-file", "DSH_TOKEN_FILE", true},
	{"tls-cert", "DSH_TLS_CERT", true},
	{"tls-key", "DSH_TLS_KEY", true},
	{"stateless", "DSH_STATELESS", true},
	{"name-limit", "DSH_NAME_LIMIT", false},
	{"drop-marker", "DSH_DROP_MARKER", false},
	{"raw", "DSH_RAW", false},
}

// bindEnv adds each bound flag's variable to its help line.
func bindEnv(fs *flag.FlagSet, binds []envFlag) {
	for _, b := range binds {
		if f := fs.Lookup(b.flag); f != nil {
			f.Usage += " (env " + b.env + ")"
		}
	}
}

// flagsFromEnv sets each bound flag the command line left unset from its
// variable: flags win, and an empty variable counts as unset. With stdio,
// the httpOnly ones are left alone. A value the flag refuses is an error
// naming the variable. It returns the variables it took.
func flagsFromEnv(fs *flag.FlagSet, binds []envFlag, getenv func(string) string, stdio bool) ([]string, error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var took []string
	for _, b := range binds {
		v := getenv(b.env)
		if v == "" || given[b.flag] || stdio && b.httpOnly {
			continue
		}
		if err := fs.Set(b.flag, v); err != nil {
			return took, fmt.Errorf("environment variable %s=%q (for --%s): %v", b.env, v, b.flag, err)
		}
		took = append(took, b.env)
	}
	return took, nil
}

// envHelp lists binds for a subcommand's help.
func envHelp(binds []envFlag) string {
	var b strings.Builder
	for _, e := range binds {
		fmt.Fprintf(&b, "  %-18s --%s", e.env, e.flag)
		if e.httpOnly {
			b.WriteString(" (not under --stdio)")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
