// Package serve is gateway mode beyond its flags: the gateway entry the
// command line makes, the composition's own gateway, and running a host
// with it until the end: over HTTP (readiness, drain at SIGTERM, a second
// signal cutting the drain) or over stdio (one session for the client that
// started the process, served while the composition still starts, and
// told what is wrong with the composition until an edit of it loads).
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/yamledit"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// DefaultHTTPAddr is where serve listens when no transport is named.
const DefaultHTTPAddr = "127.0.0.1:8931"

// GatewayID is the id of the entry serve adds: its plugin's name.
const GatewayID = gateway.PluginName

// The gateway's bounds and defaults, for the flags' help.
const (
	MinNameLimit        = gateway.MinNameLimit
	DefaultNameLimit    = gateway.DefaultNameLimit
	DefaultDrainTimeout = gateway.DefaultDrainTimeout
	DefaultListWait     = gateway.DefaultListWait
)

// Flags are what serve's command line says of the gateway entry it adds.
type Flags struct {
	HTTP, TokenEnv, TokenFile string
	TLSCert, TLSKey           string
	Raw, Stateless            bool
	NameLimit                 int
	DropMarker                bool
	DrainTimeout, ListWait    time.Duration
	Metrics                   string
}

// Entry is the gateway entry f makes, decoded and validated as the host
// will, before anything starts: its error is what the flags say wrong.
func (f Flags) Entry() (host.Entry, error) {
	e := host.Entry{ID: GatewayID, Name: gateway.PluginName, File: "(command line)"}
	var tls *gateway.TLSConfig
	if f.TLSCert != "" {
		tls = &gateway.TLSConfig{Cert: f.TLSCert, Key: f.TLSKey}
	}
	cfg, err := entryConfig(gateway.Config{HTTP: f.HTTP, TokenEnv: f.TokenEnv, TokenFile: f.TokenFile, TLS: tls, Raw: f.Raw, Stateless: f.Stateless,
		NameLimit: f.NameLimit, DropMarker: f.DropMarker, DrainTimeout: f.DrainTimeout, ListWait: f.ListWait, Metrics: f.Metrics}, gateway.Config{})
	if err != nil {
		return e, err
	}
	e.Config = cfg
	gc, err := host.Decode[gateway.Config](&e)
	if err == nil {
		_, err = gc.Token()
	}
	return e, err
}

// entryConfig is cfg as a composition entry holds it, in its type's own
// YAML keys, without the fields equal to zero's (where the config is
// decoded from: they say nothing).
func entryConfig(cfg, zero any) (map[string]any, error) {
	n, err := yamledit.Minimal(cfg, zero)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// ComposedGateway returns the id of c's own gateway entry, or "" when it
// has none.
func ComposedGateway(c *host.Composition) (string, error) {
	for _, e := range c.Entries {
		if e.Name == gateway.PluginName {
			return e.ID, nil
		}
	}
	for _, e := range c.Entries {
		if e.ID == GatewayID {
			return "", fmt.Errorf("%s:%d: entry %q is a %s, and serve adds its gateway under that id: rename the entry", e.File, e.Line, e.ID, e.Name)
		}
	}
	return "", nil
}

// MCPServers names c's enabled mcp-client entries (id, file and line).
func MCPServers(c *host.Composition) []string {
	var out []string
	for _, e := range c.Entries {
		if e.Name == mcpclient.PluginName && !e.Disabled {
			out = append(out, fmt.Sprintf("%q (%s:%d)", e.ID, e.File, e.Line))
		}
	}
	return out
}

// memoryLimit is serve's soft memory limit (GOMEMLIMIT) unless the
// environment sets one.
const memoryLimit = 256 << 20

// TuneGC sets the garbage collector for a gateway, where the environment
// (getenv) leaves GOGC or GOMEMLIMIT unset.
func TuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		// A gateway's garbage is mostly go-sdk's short-lived JSON buffers
		// (about seven 32 KiB ones per proxied call) over a small live
		// heap: collecting at 5x the live heap instead of 2x cuts the GC
		// work that bounds its throughput, for a few MiB more memory.
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		// GOGC=400 alone lets the heap grow to five times the live one:
		// twenty clients holding 7 MB answers they never read took it to
		// 760 MB over a 180 MB live heap. The soft limit collects as often
		// as needed past memoryLimit and leaves small heaps to GOGC.
		debug.SetMemoryLimit(memoryLimit)
	}
}

// NotApplied is what a client of serve is told when the composition file
// does not load: at start (running false: nothing of it runs), or at an
// edit (the composition before it runs on).
func NotApplied(file string, err error, running bool) string {
	if running {
		return fmt.Sprintf("dsh-host: the last edit of %s is not applied, and the composition before it runs on: %v", file, err)
	}
	return fmt.Sprintf("dsh-host: the composition %s is not applied, so no tool of it is served: %v. Fix the file: it is watched, and the fix applies without restarting this client.", file, err)
}

// ErrLogged fails a serve whose reason is in the log already (a shutdown
// that was not clean, a stdio session's error): the command exits 1
// without saying it again.
var ErrLogged = errors.New("serve failed; the log says why")

// Config is what Run needs besides the composition.
type Config struct {
	// File is the composition's file, c's.
	File string
	// GatewayID is the entry of the gateway served: the composition's
	// own, or GatewayID when the host's options add the flags' entry.
	GatewayID string
	// Host are the new host's options (its logger, the entries added).
	Host   *host.Options
	Logger *slog.Logger
	// Setup runs on the new host before anything starts.
	Setup func(*host.Host)
	// Started runs once the composition has started and returns the stop
	// of what it started (watching the file, the control socket).
	Started func(ctx context.Context, h *host.Host) (stop func())
	// Shutdown disposes every instance of h, bounded, and reports whether
	// it was clean.
	Shutdown func(*host.Host) bool
}

// readCloser returns r as an io.ReadCloser, closing it only if it can be.
func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps the transport from closing stdout: the process, not
// the session, owns it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
