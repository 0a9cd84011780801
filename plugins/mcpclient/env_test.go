package mcpclient

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestScrubDropsSecrets(t *testing.T) {
	for _, kv := range []string{
		// The list.
		"GH_PAT=ghp_x", "DATABASE_URL=postgres://u:pw@db:5432/app", "MY_PASSWD=p", "ANTHROPIC_AUTH=a",
		"AZURE_CLIENT_CREDENTIALS=c", "HF_PASS=p", "COOKIE=c", "SSH_AUTH_SOCK=/tmp/ssh/agent.1",
		"SLACK_WEBHOOK_URL=https://hooks.example.com/services/T0/B0/x",
		// What the scrub dropped before.
		"GITHUB_TOKEN=t", "my_api_key=k", "DB_PASSWORD=p", "Client_Secret=s", "DSH_HOME=/d", "dsh_debug=1",
		// The other words, in other places and cases.
		"PAT=x", "GITLAB_PAT_RW=x", "pat=x", "OAUTH_CLIENT=x", "BASIC_AUTH=u:p", "AUTHORIZATION=Bearer x",
		"SESSION_ID=s", "XDG_SESSION_COOKIE=x", "GPG_PRIVATE=x", "GOOGLE_APPLICATION_CREDENTIALS=/k.json",
		// URLs that carry a credential, under harmless names.
		"REDIS=redis://:pw@cache:6379/0", "MIRROR=https://u:pw@mirror.example.com/",
		"FEED=https://feed.example.com/rss?api_key=k&x=1", "HOOK=https://h.example.com/x?access_token=t",
	} {
		name := strings.SplitN(kv, "=", 2)[0]
		if got := childEnv([]string{kv}, nil, InheritScrub); len(got) != 0 {
			t.Errorf("scrub passed %s: %q", name, got)
		}
	}
}

func TestScrubKeepsTheRest(t *testing.T) {
	keep := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/u", "GOPATH=/home/u/go", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm",
		"GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=a@example.com", "XDG_CONFIG_HOME=/home/u/.config",
		"NODE_OPTIONS=--max-old-space-size=512", "HTTPS_PROXY=http://proxy.example.com:3128",
		"REPO=https://user@example.com/r.git", "PATHEXT=.COM;.EXE", "CLASSPATH=/lib", "EMPTY=",
		"PLAIN_URL=https://example.com/a?b=c",
	}
	got := childEnv(keep, nil, InheritScrub)
	want := slices.Sorted(slices.Values(keep))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scrub (-want +got):\n%s", diff)
	}
}

// A password net/url cannot parse (a bad escape, #, space, ^) or a URL
// with no host (a socket DSN) still marks the value as a secret.
func TestScrubDropsUnparseableURLPasswords(t *testing.T) {
	for _, kv := range []string{
		"DB1=postgres://u:p%zz@db/app", "DB2=postgres://u:pa#ss@db/app", "DB3=mysql://u:p w@db/app",
		"DB4=postgres://u:p^w@db/app", "DB5=postgres://u:pw@/app?host=/run/pg", "DB6=amqp://u:p/w@mq/",
	} {
		if got := childEnv([]string{kv}, nil, InheritScrub); len(got) != 0 {
			t.Errorf("scrub passed %q", got)
		}
	}
	keep := []string{"ODD=https://ex ample.com/a", "PKG=https://registry.example.com/@scope/pkg"}
	if got := childEnv(keep, nil, InheritScrub); len(got) != len(keep) {
		t.Errorf("scrub kept %q of %q", got, keep)
	}
}

func TestInheritModes(t *testing.T) {
	ambient := []string{
		"PATH=/bin", "HOME=/h", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "LANG=C", "LC_CTYPE=C", "TERM=dumb",
		"TMPDIR=/t", "TZ=UTC", "SystemRoot=C:\\Windows", "windir=C:\\Windows", "TEMP=/t", "APPDATA=/a",
		"GOPATH=/g", "EDITOR=vi", "GITHUB_TOKEN=t", "DSH_HOME=/d", "USERNAME=u",
	}
	extra := map[string]string{"GITHUB_TOKEN": "explicit", "EXTRA": "x"}
	tests := []struct {
		mode string
		want []string
	}{
		{InheritMinimal, []string{"APPDATA=/a", "EXTRA=x", "GITHUB_TOKEN=explicit", "HOME=/h", "LANG=C", "LC_CTYPE=C",
			"LOGNAME=u", "PATH=/bin", "SHELL=/bin/sh", "SystemRoot=C:\\Windows", "TEMP=/t", "TERM=dumb", "TMPDIR=/t",
			"TZ=UTC", "USER=u", "USERNAME=u", "windir=C:\\Windows"}},
		{InheritAll, []string{"APPDATA=/a", "DSH_HOME=/d", "EDITOR=vi", "EXTRA=x", "GITHUB_TOKEN=explicit", "GOPATH=/g",
			"HOME=/h", "LANG=C", "LC_CTYPE=C", "LOGNAME=u", "PATH=/bin", "SHELL=/bin/sh", "SystemRoot=C:\\Windows",
			"TEMP=/t", "TERM=dumb", "TMPDIR=/t", "TZ=UTC", "USER=u", "USERNAME=u", "windir=C:\\Windows"}},
		{InheritScrub, []string{"APPDATA=/a", "EDITOR=vi", "EXTRA=x", "GITHUB_TOKEN=explicit", "GOPATH=/g",
			"HOME=/h", "LANG=C", "LC_CTYPE=C", "LOGNAME=u", "PATH=/bin", "SHELL=/bin/sh", "SystemRoot=C:\\Windows",
			"TEMP=/t", "TERM=dumb", "TMPDIR=/t", "TZ=UTC", "USER=u", "USERNAME=u", "windir=C:\\Windows"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, childEnv(ambient, extra, tt.mode)); diff != "" {
			t.Errorf("inheritEnv %s (-want +got):\n%s", tt.mode, diff)
		}
	}
	// Windows names have no case: Path is PATH there, and only there.
	if !minimalName("Path", true) || minimalName("Path", false) || !minimalName("lc_all", true) {
		t.Error("minimalName does not fold case on Windows only")
	}
}

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
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "inheritEnv is not an option of the streamable-http transport") {
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

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:pw@host/mcp?token=x":           "https://u:***@host/mcp?token=***",
		"https://host/mcp":                        "https://host/mcp",
		"http://127.0.0.1:3000/mcp":               "http://127.0.0.1:3000/mcp",
		"https://ghp_abc@github.example.com/x":    "https://***@github.example.com/x",
		"https://host/p?a=1&b=&flag#frag":         "https://host/p?a=***&b=***&***#frag",
		"https://u:p@ss@host:8443/?k=v":           "https://u:***@host:8443/?k=***",
		"https://host?sig=abc":                    "https://host?sig=***",
		"postgres://u:pw@db:5432/app?sslmode=off": "postgres://u:***@db:5432/app?sslmode=***",
		"not a url": "not a url",
		"http://u:pw@[::1:bad/mcp?token=unparsable": "http://u:***@[::1:bad/mcp?token=***",
		// A password holding a /, # or ? ends the authority early on the
		// text, and net/url refuses the URL: it is hidden all the same.
		"https://u:p/ss@host/x":      "https://u:***@host/x",
		"https://u:pa#ss@host/x?k=v": "https://u:***@host/x?k=***",
		"https://u:p?s@host/x":       "https://u:***@host/x",
		// It parses: the @ is in the path, and the URL goes out as it is.
		"https://host/k@v/x": "https://host/k@v/x",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
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
		logs := e.logs.dump() + e.Detail()
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
