package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// TestServeEnvErrors: a bad value from the environment is a usage error
// naming the variable, before anything starts; so are the TLS and token
// file flags where they cannot apply.
func TestServeEnvErrors(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, greeterComposition)
	for _, tt := range []struct {
		name, env, value string
		args             []string
		want             string
	}{
		{"duration", "DSH_DRAIN_TIMEOUT", "abc", nil, `environment variable DSH_DRAIN_TIMEOUT="abc" (for --drain-timeout)`},
		{"log format", "DSH_LOG_FORMAT", "xml", nil, `environment variable DSH_LOG_FORMAT="xml" (for --log-format): want text, json`},
		{"bool", "DSH_STATELESS", "yes please", nil, `environment variable DSH_STATELESS="yes please"`},
		{"number", "DSH_NAME_LIMIT", "many", nil, `environment variable DSH_NAME_LIMIT="many"`},
		{"address", "DSH_SERVE_ADDR", "nowhere", nil, `http "nowhere": want HOST:PORT`},
		{"cert without key", "DSH_TLS_CERT", "/x.crt", nil, "--tls-cert and --tls-key go together"},
		{"token file under stdio", "", "", []string{"--stdio", "--token-file", "/x"}, "--token-file applies to --http only"},
		{"tls under stdio", "", "", []string{"--stdio", "--tls-cert", "/x", "--tls-key", "/y"}, "--tls-cert and --tls-key apply to --http only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(tt.env, tt.value)
			}
			code, _, stderr := runIn(t, "", append([]string{"serve", "-c", file}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 saying %q", code, stderr, tt.want)
			}
		})
	}
}

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
		took, err := flagsFromEnv(fs, serveEnv, func(k string) string { return env[k] }, stdio)
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
