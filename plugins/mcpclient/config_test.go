package mcpclient

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/oauth"
)

func TestValidate(t *testing.T) {
	stdio := func(edit func(*Config)) Config {
		c := Defaults()
		c.Transport, c.ServerName, c.Command = TransportStdio, "github", "npx"
		if edit != nil {
			edit(&c)
		}
		return c
	}
	http := func(edit func(*Config)) Config {
		c := Defaults()
		c.Transport, c.ServerName, c.URL = TransportStreamableHTTP, "web", "http://127.0.0.1:3000/mcp"
		if edit != nil {
			edit(&c)
		}
		return c
	}
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none means valid
	}{
		{"stdio", stdio(nil), nil},
		{"http with headers", http(func(c *Config) { c.Headers = map[string]string{"Authorization": "Bearer x"} }), nil},
		{"accepts github-prod_1", stdio(func(c *Config) { c.ServerName = "github-prod_1" }), nil},
		{"missing serverName", stdio(func(c *Config) { c.ServerName = "" }), []string{"serverName: required"}},
		{"invalid serverName", stdio(func(c *Config) { c.ServerName = "bad name!" }), []string{`serverName: "bad name!" must match`}},
		{"33 characters", stdio(func(c *Config) { c.ServerName = strings.Repeat("a", 33) }), []string{"serverName", "must match"}},
		{"missing transport", stdio(func(c *Config) { c.Transport = "" }), []string{"transport: required"}},
		{"pinned protocol", stdio(func(c *Config) { c.ProtocolVersion = "2025-06-18" }), nil},
		{"pin warn", stdio(func(c *Config) { c.Pin = "warn" }), nil},
		{"unknown pin", stdio(func(c *Config) { c.Pin = "trust" }), []string{`pin: "trust" must be hold, warn or off`}},
		{"roots", stdio(func(c *Config) { c.Roots = []string{"/srv/a", "file:///home/me"} }), nil},
		{"bad roots", stdio(func(c *Config) { c.Roots = []string{"/ok", "relative/dir", "file://host/x", "https://x/y"} }),
			[]string{`roots[1]: "relative/dir" must be an absolute path or a file:// URI`, `roots[2]: "file://host/x" is not a file:// URI`, `roots[3]: "https://x/y" must be an absolute path`}},
		{"unknown protocol", stdio(func(c *Config) { c.ProtocolVersion = "2024-01-01" }), []string{`protocolVersion: "2024-01-01" is not one go-sdk speaks`, "2025-11-25"}},
		{"unknown transport", stdio(func(c *Config) { c.Transport = "websocket" }), []string{`transport: "websocket" must be stdio, streamable-http or sse`}},
		{"sse without url", stdio(func(c *Config) { c.Transport = TransportSSE }), []string{"url: required with transport sse", "command: not an option of the sse transport"}},
		{"sse with oauth", Config{ServerName: "s", Transport: TransportSSE, URL: "http://127.0.0.1/sse", OAuth: oauth.Config{ClientID: "x"}}, []string{"oauth: not supported with transport sse"}},
		{"stdio without command", stdio(func(c *Config) { c.Command = "" }), []string{"command: required with transport stdio"}},
		{"stdio with url", stdio(func(c *Config) { c.URL = "http://x" }), []string{"url: not an option of the stdio transport"}},
		{"stdio with headers", stdio(func(c *Config) { c.Headers = map[string]string{"a": "b"} }), []string{"headers: not an option of the stdio transport"}},
		{"http without url", http(func(c *Config) { c.URL = "" }), []string{"url: required with transport streamable-http"}},
		{"http relative url", http(func(c *Config) { c.URL = "/mcp" }), []string{`url: "/mcp" must be an absolute`}},
		{"http with command", http(func(c *Config) { c.Command = "npx"; c.Env = map[string]string{"A": "b"} }),
			[]string{"command: not an option of the streamable-http transport", "env: not an option"}},
		{"bad header name", http(func(c *Config) { c.Headers = map[string]string{"Bad Name": "x"} }), []string{`headers.Bad Name: "Bad Name" is not a valid header name`}},
		{"zero toolCallTimeoutMs", stdio(func(c *Config) { c.ToolCallTimeoutMs = 0 }), []string{"toolCallTimeoutMs: must be a positive number no greater than 2147483647"}},
		{"zero startupTimeoutMs", stdio(func(c *Config) { c.StartupTimeoutMs = -1 }), []string{"startupTimeoutMs: must be a positive number"}},
		{"negative toolCallMaxMs", stdio(func(c *Config) { c.ToolCallMaxMs = -1 }), []string{"toolCallMaxMs: must be 0 (no cap) or a positive number"}},
		{"toolCallMaxMs below the silence", stdio(func(c *Config) { c.ToolCallMaxMs = 1000 }),
			[]string{"toolCallMaxMs: 1000 caps the whole call, so it must be at least toolCallTimeoutMs (60000)"}},
		{"zero maxResultBytes", stdio(func(c *Config) { c.MaxResultBytes = 0 }), []string{"maxResultBytes: must be a positive integer"}},
		{"initialDelayMs zero", stdio(func(c *Config) { c.Reconnect.InitialDelayMs = 0 }),
			[]string{"reconnect.initialDelayMs: must be a positive number no greater than 2147483647"}},
		{"maxDelayMs too large", stdio(func(c *Config) { c.Reconnect.MaxDelayMs = 1 << 31 }),
			[]string{"reconnect.maxDelayMs: must be a positive number no greater than 2147483647"}},
		{"initial above max", stdio(func(c *Config) { c.Reconnect.InitialDelayMs = 40000 }),
			[]string{"reconnect.initialDelayMs: must be less than or equal to maxDelayMs"}},
		{"maxAttempts zero", stdio(func(c *Config) { c.Reconnect.MaxAttempts = 0 }), []string{"reconnect.maxAttempts: must be a positive integer"}},
		{"empty include pattern", stdio(func(c *Config) { c.Tools.Include = []string{""} }), []string{"tools.include[0]: empty"}},
		{"every problem at once", Config{}, []string{"serverName: required", "transport: required", "toolCallTimeoutMs", "reconnect.maxAttempts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error with %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// A partial reconnect block decoded over Defaults keeps the other defaults.
func TestPartialReconnectMergesOverDefaults(t *testing.T) {
	cfg := Defaults()
	src := "serverName: gh\ntransport: stdio\ncommand: x\nreconnect:\n  maxAttempts: 3\n"
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	want := Reconnect{Enabled: true, InitialDelayMs: 500, MaxDelayMs: 30000, MaxAttempts: 3}
	if diff := cmp.Diff(want, cfg.Reconnect); diff != "" {
		t.Errorf("reconnect (-want +got):\n%s", diff)
	}
	if cfg.ToolCallTimeoutMs != 60000 || cfg.StartupTimeoutMs != 30000 || cfg.MaxResultBytes != 1<<20 {
		t.Errorf("defaults lost: %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func TestBackoff(t *testing.T) {
	r := Reconnect{InitialDelayMs: 500, MaxDelayMs: 30000}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := r.backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := r.backoff(5000); got != 30*time.Second {
		t.Errorf("backoff(5000) = %s, want the cap", got)
	}
}

func TestOAuthConfigValidation(t *testing.T) {
	base := func() Config {
		c := Defaults()
		c.ServerName, c.Transport, c.URL = "web", TransportStreamableHTTP, "https://mcp.example/mcp"
		return c
	}
	for _, tt := range []struct {
		name string
		set  func(*oauth.Config)
		want string // "" = valid
	}{
		{"preregistered", func(o *oauth.Config) {
			o.ClientID, o.ClientSecret, o.Scopes, o.CallbackPort = "id", "s", []string{"read"}, 8765
		}, ""},
		{"cimd", func(o *oauth.Config) { o.ClientMetadataURL = "https://me.example/client.json" }, ""},
		{"machine", func(o *oauth.Config) { o.Grant, o.ClientID, o.ClientSecret = oauth.GrantClientCredentials, "id", "s" }, ""},
		{"machine jwt", func(o *oauth.Config) {
			o.Grant, o.ClientID, o.PrivateKeyFile, o.SigningAlgorithm = oauth.GrantClientCredentials, "id", "k.pem", "ES256"
		}, ""},
		{"grant", func(o *oauth.Config) { o.Grant = "password" }, "oauth.grant"},
		{"port", func(o *oauth.Config) { o.CallbackPort = 70000 }, "oauth.callbackPort"},
		{"cimd http", func(o *oauth.Config) { o.ClientMetadataURL = "http://me.example/c.json" }, "oauth.clientMetadataUrl"},
		{"cimd root", func(o *oauth.Config) { o.ClientMetadataURL = "https://me.example/" }, "oauth.clientMetadataUrl"},
		{"scope space", func(o *oauth.Config) { o.Scopes = []string{"a b"} }, "oauth.scopes[0]"},
		{"secret alone", func(o *oauth.Config) { o.ClientSecret = "s" }, "oauth.clientSecret: needs clientId"},
		{"machine no id", func(o *oauth.Config) { o.Grant, o.ClientSecret = oauth.GrantClientCredentials, "s" }, "oauth.clientId: required"},
		{"machine both", func(o *oauth.Config) {
			o.Grant, o.ClientID, o.ClientSecret, o.PrivateKeyFile = oauth.GrantClientCredentials, "id", "s", "k.pem"
		}, "exactly one of clientSecret and privateKeyFile"},
		{"key without grant", func(o *oauth.Config) { o.PrivateKeyFile = "k.pem" }, "oauth.privateKeyFile: only used"},
		{"alg", func(o *oauth.Config) {
			o.Grant, o.ClientID, o.PrivateKeyFile, o.SigningAlgorithm = oauth.GrantClientCredentials, "id", "k.pem", "HS256"
		}, "oauth.signingAlgorithm"},
	} {
		cfg := base()
		tt.set(&cfg.OAuth)
		err := cfg.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	stdio := Defaults()
	stdio.ServerName, stdio.Transport, stdio.Command = "s", TransportStdio, "x"
	stdio.OAuth.ClientID = "id"
	if err := stdio.Validate(); err == nil || !strings.Contains(err.Error(), "oauth: not an option of the stdio transport") {
		t.Errorf("oauth on stdio: %v", err)
	}
}
