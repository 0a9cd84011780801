package main

import (
	"strings"
	"testing"
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
