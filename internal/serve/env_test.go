package serve

import (
	"flag"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/cli"
)

// TestFlagsFromEnv: a flag given wins over its variable, an empty variable
// is unset, and under --stdio the http-only variables are left alone.
func TestFlagsFromEnv(t *testing.T) {
	env := map[string]string{"DSH_SERVE_ADDR": "0.0.0.0:1", "DSH_DRAIN_TIMEOUT": "7s", "DSH_LIST_WAIT": "", "DSH_METRICS_ADDR": "127.0.0.1:2"}
	parse := func(stdio bool, args ...string) (addr, metrics string, drain, wait time.Duration, took []string) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.StringVar(&addr, "http", "", "")
		fs.StringVar(&metrics, "metrics", "", "")
		fs.DurationVar(&drain, "drain-timeout", 0, "")
		fs.DurationVar(&wait, "list-wait", 0, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		took, err := cli.FlagsFromEnv(fs, Env, func(k string) string { return env[k] }, stdio)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	addr, metrics, drain, wait, took := parse(false, "--drain-timeout", "3s")
	if addr != "0.0.0.0:1" || metrics != "127.0.0.1:2" || drain != 3*time.Second || wait != 0 {
		t.Errorf("http %q metrics %q drain %v wait %v (took %v); want the variables but the flag's drain 3s, and no list-wait", addr, metrics, drain, wait, took)
	}
	addr, metrics, drain, _, _ = parse(true)
	if addr != "" || drain != 0 || metrics != "127.0.0.1:2" {
		t.Errorf("under --stdio: http %q drain %v metrics %q; want only metrics from the environment", addr, drain, metrics)
	}
}

// TestLogLevel: serve logs at warn under --stdio, at info over HTTP,
// unless DSH_LOG_LEVEL names a level.
func TestServeLogLevel(t *testing.T) {
	for _, tt := range []struct {
		stdio bool
		env   string
		want  string
	}{{true, "", "warn"}, {false, "", "info"}, {true, "debug", "debug"}, {false, "ERROR", "error"}, {true, "loud", "warn"}} {
		if got := LogLevel(tt.stdio, func(string) string { return tt.env }); got != tt.want {
			t.Errorf("LogLevel(stdio %v, DSH_LOG_LEVEL=%q) = %q, want %q", tt.stdio, tt.env, got, tt.want)
		}
	}
}
