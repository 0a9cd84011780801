package mcpclient

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/oauth"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Transports a Config may name.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	// TransportSSE is the legacy HTTP+SSE transport (2024-11-05), for
	// servers that do not speak Streamable HTTP yet.
	TransportSSE = "sse"
)

// maxMs is the largest millisecond value a config accepts (2^31-1, the
// original's timer limit).
const maxMs = math.MaxInt32

// maxInstructionBytes caps the server instructions kept for the prompt.
const maxInstructionBytes = 32 << 10

// ServerNameRule is the pattern every serverName matches (ValidServerName).
const ServerNameRule = `^[A-Za-z0-9_-]{1,32}$`

// ValidServerName says whether name matches ServerNameRule. It is a loop,
// not the compiled rule: a counted repetition compiles to a 30 KB program
// that every command's start would allocate.
func ValidServerName(name string) bool {
	if len(name) < 1 || len(name) > 32 {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Config is one mcp-client instance: one MCP server. Defaults returns the
// values a composition entry's config is decoded over.
type Config struct {
	// Transport is "stdio", "streamable-http" or "sse" (the legacy
	// HTTP+SSE transport).
	Transport string `yaml:"transport"`
	// ServerName namespaces the server's tools (mcp__<serverName>__<tool>);
	// it must match ^[A-Za-z0-9_-]{1,32}$ and be unique among live instances.
	ServerName string `yaml:"serverName"`

	// Command, Args, Env and Cwd start a stdio server. Env is merged over
	// what InheritEnv keeps of the host's environment (see the package doc).
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	// Cwd is the server's working directory; a relative one is relative
	// to the directory of the file the entry is in, so that a composition
	// means the same wherever the host is started from (an agent CLI
	// starts `serve --stdio` in its own directory).
	Cwd string `yaml:"cwd"`
	// InheritEnv is what a stdio server inherits of the host's
	// environment: "scrub" (default: all but what looks like a secret),
	// "minimal" (what a program needs to run) or "all".
	InheritEnv string `yaml:"inheritEnv"`
	// Sandbox is what a stdio server may do beyond what it needs to run
	// (package sandbox, docs/sandbox.md): mode, read, write, connect,
	// bind, udp, unix, limits.
	Sandbox sandbox.Config `yaml:"sandbox"`

	// URL and Headers reach a Streamable HTTP server; Headers go on every
	// request.
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`

	// ToolCallTimeoutMs is the silence a tools/call may keep (default
	// 60000): the call fails when the server sends neither its result nor
	// a progress notification for that long. Each progress notification
	// starts it again.
	ToolCallTimeoutMs int `yaml:"toolCallTimeoutMs"`
	// ToolCallMaxMs caps a tools/call's whole duration, progress or not
	// (default 0: no cap).
	ToolCallMaxMs int `yaml:"toolCallMaxMs"`
	// StartupTimeoutMs bounds one connection attempt: connect, initialize
	// and the full tool discovery (default 30000).
	StartupTimeoutMs int `yaml:"startupTimeoutMs"`
	// FailOnStartupError makes the instance fail when its first connection
	// attempt fails, instead of starting with no tools and retrying.
	FailOnStartupError bool `yaml:"failOnStartupError"`
	// Startup is "eager" (default: the server starts with the instance)
	// or "lazy" (its tools come from the catalog cache and the server
	// starts on the first call); see lazy.go.
	Startup string `yaml:"startup"`
	// IdleTimeoutMs stops a server no call used for that long; its tools
	// stay registered and the next call starts it again (default 0: never).
	IdleTimeoutMs int `yaml:"idleTimeoutMs"`
	// ProtocolVersion pins the MCP revision offered to the server, such as
	// "2025-11-25" (default: the latest go-sdk speaks, which the server
	// may negotiate down). Without it, a server that sends requests in the
	// middle of a call (elicitation, sampling) the 2025-11-25 way, which
	// go-sdk refuses on 2026-07-28, is switched to 2025-11-25 at its first
	// such call (revision.go).
	ProtocolVersion string `yaml:"protocolVersion"`
	// Roots are the directories the server may work in, answered to its
	// roots/list: absolute paths or file:// URIs. A call made through the
	// gateway by a client that declared roots gets that client's instead.
	Roots []string `yaml:"roots"`
	// Reconnect is the supervisor's policy after a lost connection.
	Reconnect Reconnect `yaml:"reconnect"`
	// Tools filters the server's tools by raw name.
	Tools ToolFilter `yaml:"tools"`
	// Pin is what the policy does with a tool that appears or changes
	// after the server's tools were first trusted: "hold" (the default:
	// not offered, calls refused with the diff until `dsh-host trust`),
	// "warn" (offered, the change logged) or "off" (not checked).
	Pin string `yaml:"pin"`
	// MaxResultBytes caps the model-facing text of one result (default
	// 1 MiB); the canonical value is never cut.
	MaxResultBytes int `yaml:"maxResultBytes"`

	// OAuth configures how the host logs in to a remote server that asks
	// for authorization. A server that does is logged in to without it
	// (dynamic client registration); see package oauth.
	OAuth oauth.Config `yaml:"oauth"`
}

// Reconnect is the reconnect policy. A partial block in a composition is
// merged over the defaults.
type Reconnect struct {
	// Enabled turns automatic reconnection on (default true).
	Enabled bool `yaml:"enabled"`
	// InitialDelayMs is the first delay; it doubles per consecutive failed
	// attempt (default 500).
	InitialDelayMs int `yaml:"initialDelayMs"`
	// MaxDelayMs caps the delay, and is the uptime after which the attempt
	// budget resets (default 30000).
	MaxDelayMs int `yaml:"maxDelayMs"`
	// MaxAttempts is the number of consecutive failed attempts per outage
	// before giving up (default 10).
	MaxAttempts int `yaml:"maxAttempts"`
}

// ToolFilter selects tools by raw name with glob patterns where `*` matches
// any run of characters. A tool is kept when Include is empty or one of its
// patterns matches, and no Exclude pattern matches.
type ToolFilter struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
}

// Defaults returns the default config: every optional field at its default,
// transport and serverName unset.
func Defaults() Config {
	return Config{
		ToolCallTimeoutMs: 60000,
		StartupTimeoutMs:  30000,
		Reconnect: Reconnect{
			Enabled:        true,
			InitialDelayMs: 500,
			MaxDelayMs:     30000,
			MaxAttempts:    10,
		},
		MaxResultBytes: 1 << 20,
		InheritEnv:     InheritScrub,
		Startup:        StartupEager,
	}
}

// Validate checks cfg and returns every problem found, each a
// host.KeyError naming its key, so that the host reports it at that key's
// line.
func (cfg *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, host.KeyErrorf(key, format, args...)) }

	switch {
	case cfg.ServerName == "":
		bad("serverName", "required: a short name that namespaces this server's tools, like github")
	case !ValidServerName(cfg.ServerName):
		bad("serverName", "%q must match ^[A-Za-z0-9_-]{1,32}$", cfg.ServerName)
	}

	switch cfg.InheritEnv {
	case InheritScrub, InheritMinimal, InheritAll:
	default:
		bad("inheritEnv", "%q must be scrub, minimal or all", cfg.InheritEnv)
	}
	stdioSet := map[string]bool{
		"command": cfg.Command != "", "args": len(cfg.Args) > 0, "env": len(cfg.Env) > 0, "cwd": cfg.Cwd != "",
		// scrub is the default, so only another value was set on purpose.
		"inheritEnv": cfg.InheritEnv != InheritScrub && cfg.InheritEnv != "",
		"sandbox":    cfg.Sandbox.Set() || cfg.Sandbox.Mode != "",
	}
	httpSet := map[string]bool{"url": cfg.URL != "", "headers": len(cfg.Headers) > 0, "oauth": cfg.OAuth.Set()}
	foreign := func(set map[string]bool, order []string, transport string) {
		for _, k := range order {
			if set[k] {
				bad(k, "not an option of the %s transport; remove it or change transport", transport)
			}
		}
	}
	switch cfg.Transport {
	case TransportStdio:
		if strings.TrimSpace(cfg.Command) == "" {
			bad("command", "required with transport stdio")
		}
		foreign(httpSet, []string{"url", "headers", "oauth"}, TransportStdio)
	case TransportStreamableHTTP, TransportSSE:
		if cfg.URL == "" {
			bad("url", "required with transport %s", cfg.Transport)
		} else if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "%q must be an absolute http:// or https:// URL", remote.Redact(cfg.URL))
		}
		foreign(stdioSet, []string{"command", "args", "env", "cwd", "inheritEnv", "sandbox"}, cfg.Transport)
		if cfg.Transport == TransportSSE && cfg.OAuth.Set() {
			bad("oauth", "not supported with transport sse (go-sdk's legacy SSE client cannot log in); use streamable-http, or send a token in headers")
		}
		for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
			if k == "" || strings.ContainsAny(k, " \t\r\n:") {
				bad("headers."+k, "%q is not a valid header name", k)
			}
		}
	case "":
		bad("transport", "required: stdio, streamable-http or sse")
	default:
		bad("transport", "%q must be stdio, streamable-http or sse (legacy HTTP+SSE)", cfg.Transport)
	}

	positiveMs := func(key string, v int) {
		if v <= 0 || v > maxMs {
			bad(key, "must be a positive number no greater than %d", maxMs)
		}
	}
	positiveMs("toolCallTimeoutMs", cfg.ToolCallTimeoutMs)
	positiveMs("startupTimeoutMs", cfg.StartupTimeoutMs)
	if cfg.MaxResultBytes <= 0 {
		bad("maxResultBytes", "must be a positive integer")
	}
	if cfg.OAuth.Set() {
		errs = append(errs, cfg.OAuth.Validate()...)
	}
	errs = append(errs, cfg.Reconnect.validate()...)
	if cfg.ToolCallMaxMs < 0 || cfg.ToolCallMaxMs > maxMs {
		bad("toolCallMaxMs", "must be 0 (no cap) or a positive number no greater than %d", maxMs)
	} else if cfg.ToolCallMaxMs > 0 && cfg.ToolCallMaxMs < cfg.ToolCallTimeoutMs {
		bad("toolCallMaxMs", "%d caps the whole call, so it must be at least toolCallTimeoutMs (%d), the silence allowed between progress notifications", cfg.ToolCallMaxMs, cfg.ToolCallTimeoutMs)
	}
	if v := cfg.ProtocolVersion; v != "" && !slices.Contains(mcp.SupportedProtocolVersions(), v) {
		bad("protocolVersion", "%q is not one go-sdk speaks: %s", v, strings.Join(mcp.SupportedProtocolVersions(), ", "))
	}
	errs = append(errs, cfg.validateStartup()...)
	switch cfg.Pin {
	case "", tools.PinHold, tools.PinWarn, tools.PinOff:
	default:
		bad("pin", "%q must be hold, warn or off", cfg.Pin)
	}
	if cfg.Transport == TransportStdio {
		for _, err := range cfg.Sandbox.Validate() {
			var ke *sandbox.KeyError
			if errors.As(err, &ke) {
				err = host.KeyErrorf("sandbox."+ke.Key, "%w", ke.Err)
			}
			errs = append(errs, err)
		}
	}
	for i, r := range cfg.Roots {
		if _, err := rootURI(r); err != nil {
			bad(fmt.Sprintf("roots[%d]", i), "%v", err)
		}
	}
	for i, p := range cfg.Tools.Include {
		if p == "" {
			bad(fmt.Sprintf("tools.include[%d]", i), "empty; use * to match every tool")
		}
	}
	for i, p := range cfg.Tools.Exclude {
		if p == "" {
			bad(fmt.Sprintf("tools.exclude[%d]", i), "empty; remove it")
		}
	}
	return errors.Join(errs...)
}

func (r *Reconnect) validate() []error {
	var errs []error
	if r.InitialDelayMs <= 0 || r.InitialDelayMs > maxMs {
		errs = append(errs, host.KeyErrorf("reconnect.initialDelayMs", "must be a positive number no greater than %d", maxMs))
	}
	if r.MaxDelayMs <= 0 || r.MaxDelayMs > maxMs {
		errs = append(errs, host.KeyErrorf("reconnect.maxDelayMs", "must be a positive number no greater than %d", maxMs))
	}
	if len(errs) == 0 && r.InitialDelayMs > r.MaxDelayMs {
		errs = append(errs, host.KeyErrorf("reconnect.initialDelayMs", "must be less than or equal to maxDelayMs"))
	}
	if r.MaxAttempts <= 0 {
		errs = append(errs, host.KeyErrorf("reconnect.maxAttempts", "must be a positive integer"))
	}
	return errs
}

// backoff returns the delay before reconnect attempt n (1-based):
// min(maxDelay, initialDelay·2^(n-1)), without jitter.
func (r *Reconnect) backoff(n int) time.Duration {
	d := float64(r.InitialDelayMs) * math.Pow(2, float64(n-1))
	if d > float64(r.MaxDelayMs) {
		d = float64(r.MaxDelayMs)
	}
	return time.Duration(d) * time.Millisecond
}

func ms(v int) time.Duration { return time.Duration(v) * time.Millisecond }

// rootURI returns the file:// URI of a roots entry: an absolute path, or
// a file:// URI with an absolute path.
func rootURI(r string) (string, error) {
	if strings.HasPrefix(r, "file:") {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "file" || !strings.HasPrefix(u.Path, "/") || (u.Host != "" && u.Host != "localhost") {
			return "", fmt.Errorf("%q is not a file:// URI of an absolute path, such as file:///home/me/project", r)
		}
		return (&url.URL{Scheme: "file", Path: u.Path}).String(), nil
	}
	if !filepath.IsAbs(r) {
		return "", fmt.Errorf("%q must be an absolute path or a file:// URI (a root names a directory the server may work in)", r)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Clean(r))}).String(), nil
}

// rootPaths are the entry's roots as paths, for the sandbox to grant.
func (cfg *Config) rootPaths() []string {
	var out []string
	for _, r := range cfg.Roots {
		if uri, err := rootURI(r); err == nil {
			if u, err := url.Parse(uri); err == nil {
				out = append(out, filepath.FromSlash(u.Path))
			}
		}
	}
	return out
}

// roots are the entry's roots as MCP roots (Validate checked them).
func (cfg *Config) roots() []*mcp.Root {
	var out []*mcp.Root
	for _, r := range cfg.Roots {
		if uri, err := rootURI(r); err == nil {
			out = append(out, &mcp.Root{URI: uri, Name: filepath.Base(filepath.FromSlash(strings.TrimPrefix(uri, "file://")))})
		}
	}
	return out
}
