package mcpclient

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestInheritEnvConfig(t *testing.T) {
	cfg := Defaults()
	if cfg.InheritEnv != InheritScrub {
		t.Fatalf("default inheritEnv = %q", cfg.InheritEnv)
	}
	cfg.Transport, cfg.ServerName, cfg.Command = TransportStdio, "s", "srv"
	for _, mode := range []string{InheritScrub, InheritMinimal, InheritAll} {
		cfg.InheritEnv = mode
		if err := cfg.Validate(); err != nil {
			t.Errorf("inheritEnv %s: %v", mode, err)
		}
	}
	for _, bad := range []string{"", "none", "Minimal", "scrubbed"} {
		cfg.InheritEnv = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "inheritEnv") {
			t.Errorf("inheritEnv %q: error %v, want one naming inheritEnv", bad, err)
		}
	}
	h := Defaults()
	h.Transport, h.ServerName, h.URL, h.InheritEnv = TransportStreamableHTTP, "w", "http://127.0.0.1:1/mcp", InheritMinimal
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "inheritEnv: not an option of the streamable-http transport") {
		t.Errorf("inheritEnv with streamable-http: %v", err)
	}
}

// A real stdio server sees what the mode passes: the in-repo fixture's env
// tool lists its environment.
func TestStdioChildEnvironment(t *testing.T) {
	t.Setenv("GH_PAT", "ghp_secret")
	t.Setenv("DATABASE_URL", "postgres://u:pw@db/app")
	t.Setenv("EDITOR_FOR_TEST", "vi")
	fixture := mcptest.FixtureBinary(t)
	for _, tt := range []struct {
		mode       string
		has, lacks []string
	}{
		{InheritScrub, []string{"EDITOR_FOR_TEST=vi", "ASKED=yes"}, []string{"GH_PAT", "DATABASE_URL"}},
		{InheritMinimal, []string{"ASKED=yes", "PATH="}, []string{"GH_PAT", "DATABASE_URL", "EDITOR_FOR_TEST"}},
		{InheritAll, []string{"GH_PAT=ghp_secret", "EDITOR_FOR_TEST=vi"}, nil},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			cfg := testConfig("fx")
			cfg.Command, cfg.InheritEnv = fixture, tt.mode
			cfg.Env = map[string]string{"ASKED": "yes"}
			e := mustStart(t, cfg, nil, withTransport)
			res := e.call(tools.Caller{}, "mcp__fx__env", "{}")
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			lines := strings.Split(resultText(res), "\n")
			for _, want := range tt.has {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
					t.Errorf("the server's environment lacks %s", want)
				}
			}
			for _, name := range tt.lacks {
				if slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, name+"=") }) {
					t.Errorf("the server's environment holds %s", name)
				}
			}
		})
	}
}

func TestConfigHidesURLSecrets(t *testing.T) {
	for url, secret := range map[string][]string{
		"ftp://u:pw@host/x?token=x": {"pw", "token=x"},
		"https://u:p/ss@host/x":     {"p/ss"},
	} {
		cfg := Defaults()
		cfg.Transport, cfg.ServerName, cfg.URL = TransportStreamableHTTP, "w", url
		err := cfg.Validate()
		if err == nil {
			t.Errorf("%s: validated", url)
			continue
		}
		for _, sec := range secret {
			if strings.Contains(err.Error(), sec) {
				t.Errorf("validate error shows the URL's secret %q: %v", sec, err)
			}
		}
	}
}

// The server still gets the URL's credentials; the log never shows them.
func TestStreamableHTTPURLSecrets(t *testing.T) {
	t.Run("the server gets them", func(t *testing.T) {
		h := newHTTPServer(t)
		var mu sync.Mutex
		var seen []string
		inner := h.handler
		h.stop()
		h.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, _ := r.BasicAuth()
			mu.Lock()
			seen = append(seen, u+":"+p+"?"+r.URL.RawQuery)
			mu.Unlock()
			inner.ServeHTTP(w, r)
		})
		h.start(h.addr)
		cfg := httpConfig(h)
		cfg.Headers = nil
		cfg.URL = "http://alice:s3cret@" + h.addr + "/mcp?token=qtok&v=1"
		e := mustStart(t, cfg, nil, withTransport)
		if res := e.call(tools.Caller{}, "mcp__web__ping", "{}"); resultText(res) != "pong" {
			t.Fatalf("ping = %q, %v", resultText(res), res.Err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			t.Fatal("no request seen")
		}
		for i, s := range seen {
			if s != "alice:s3cret?token=qtok&v=1" {
				t.Errorf("request %d carried %q", i, s)
			}
		}
	})
	t.Run("a configured Authorization header wins over the userinfo", func(t *testing.T) {
		h := newHTTPServer(t)
		cfg := httpConfig(h) // Authorization: Bearer sekrit
		cfg.URL = "http://alice:s3cret@" + h.addr + "/mcp"
		e := mustStart(t, cfg, nil, withTransport)
		if res := e.call(tools.Caller{}, "mcp__web__ping", "{}"); resultText(res) != "pong" {
			t.Fatalf("ping = %q, %v", resultText(res), res.Err)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, a := range h.auth {
			if a != "Bearer sekrit" {
				t.Errorf("request %d carried Authorization %q", i, a)
			}
		}
	})
	t.Run("the log and the status do not", func(t *testing.T) {
		// A port nobody listens on: net/http's dial error quotes the URL.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		cfg := testConfig("web")
		cfg.Transport, cfg.Command = TransportStreamableHTTP, ""
		cfg.URL = "http://alice:s3cret@" + addr + "/mcp?token=qtok"
		cfg.Reconnect = Reconnect{Enabled: true, InitialDelayMs: 1, MaxDelayMs: 5, MaxAttempts: 2}
		e := mustStart(t, cfg, nil, withTransport)
		eventually(t, "give up", func() bool { return strings.HasPrefix(e.Detail(), "gave up") })
		logs := e.logs.Dump() + e.Detail()
		for _, secret := range []string{"s3cret", "qtok"} {
			if strings.Contains(logs, secret) {
				t.Errorf("the log shows %q:\n%s", secret, logs)
			}
		}
		if !strings.Contains(logs, "alice:***@"+addr+"/mcp?token=***") {
			t.Errorf("the log does not name the redacted URL:\n%s", logs)
		}
	})
}
