// Package addserver is `dsh-host add`, `search` and `remove`: it turns a
// command line, a URL or a server of an MCP Registry into an mcp-client
// entry, writes it into the composition (every other byte kept, the
// result checked as the host checks a composition before it replaces the
// file), holds the server's tools until reviewed (services/policy/pins),
// and takes an entry out again. The running host of the composition
// applies the change on its own: it watches the file.
package addserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/fsutil"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/importer"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/mcpservers"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/policy/pins"
)

// Plan is an entry to add.
type Plan struct {
	Server mcpservers.Imported
	// From is the registry server it comes from (name@version), and
	// Registry that registry's URL; "" for a command line or a URL.
	From, Registry string
	// Via says what runs: "npm: npx -y pkg@1.0", "streamable-http URL".
	Via string
	// Exports are the variables the entry refers to for its secrets.
	Exports []Export
	// Notes say what was chosen, granted or left out, and why.
	Notes []string
}

// Export is a variable to set where dsh-host runs.
type Export struct {
	Var string
	// Value is the secret given inline (--env, --header), printed once
	// so that it can be set; "" for a value the user has to find.
	Value string
	// Hint describes the value (from the server's document).
	Hint string
	// Set is true when the variable is set where add runs.
	Set bool
}

// Command is `add NAME -- COMMAND ARGS…` with env (KEY=VALUE).
func Command(name, command string, args []string, env map[string]string) (*Plan, error) {
	fields := map[string]any{"command": command, "args": anys(args)}
	if len(env) > 0 {
		fields["env"] = stringAnys(env)
	}
	return manual(name, fields, "stdio: "+strings.Join(append([]string{command}, args...), " "))
}

// Remote is `add --transport http|sse NAME URL` with headers.
func Remote(name, transport, url string, headers map[string]string) (*Plan, error) {
	switch transport {
	case "http", "streamable-http":
		transport = mcpclient.TransportStreamableHTTP
	case "sse":
	default:
		return nil, fmt.Errorf("transport %q: want http or sse (or stdio, with -- COMMAND ARGS)", transport)
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("%q is not an http(s) URL", url)
	}
	fields := map[string]any{"type": transport, "url": url}
	if len(headers) > 0 {
		fields["headers"] = stringAnys(headers)
	}
	return manual(name, fields, transport+" "+url)
}

func stringAnys(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// manual builds the plan of a command line or URL: its inline secrets
// are moved to variables (as import moves them).
func manual(name string, fields map[string]any, via string) (*Plan, error) {
	imp, err := convert(name, fields)
	if err != nil {
		return nil, err
	}
	list := []mcpservers.Imported{imp}
	p := &Plan{Via: via}
	for _, s := range mcpservers.MoveSecrets(list) {
		p.Exports = append(p.Exports, Export{Var: s.Var, Value: s.Value})
	}
	p.Server = list[0]
	return p, nil
}

// convert makes fields (a server as MCP clients write it) an entry named
// name, with mcp-client's conversion (and its sandbox grants of known
// servers). A name that is not a serverName, or a built-in service's id,
// is refused rather than renamed.
func convert(name string, fields map[string]any) (mcpservers.Imported, error) {
	if !mcpclient.ValidServerName(name) {
		return mcpservers.Imported{}, fmt.Errorf("%q is not a server name: use letters, digits, _ and -, at most 32 (%s)", name, mcpclient.ServerNameRule)
	}
	for _, p := range host.Plugins() {
		if p.Builtin && p.Name == name {
			return mcpservers.Imported{}, fmt.Errorf("%q is the id of the built-in %s service: give the server another name (--name)", name, p.Name)
		}
	}
	imp, err := mcpservers.Convert(name, fields, nil)
	if err != nil {
		return imp, fmt.Errorf("%s: %w", name, err)
	}
	if imp.Config.ServerName != name {
		return imp, fmt.Errorf("%q cannot be a server name", name)
	}
	return imp, nil
}

// Options is where and how an entry is written.
type Options struct {
	// File is the composition.
	File string
	// Trust skips the hold: the server's first list is trusted on first
	// use, as for an entry written by hand.
	Trust bool
	// Env reports a variable of add's environment (nil: os.LookupEnv):
	// the composition is checked with it.
	Env func(string) (string, bool)
}

// Result is what Write did.
type Result struct {
	File, Name string
	// Held is why the server's tools are held until reviewed, "" with
	// Options.Trust.
	Held string
	// Running is true when a host of the composition answers on its
	// control socket: it starts the server on its own.
	Running bool
}

// Write appends p's entry to the composition o.File (created when
// missing) and, unless o.Trust, holds its tools until reviewed. Nothing
// is written when the name is in use, when the composition does not pass
// the host's checks with the entry, or when the hold cannot be written.
func Write(ctx context.Context, p *Plan, o Options) (*Result, error) {
	lookup := o.Env
	if lookup == nil {
		lookup = os.LookupEnv
	}
	name := p.Server.Config.ServerName
	res := &Result{File: o.File, Name: name}
	// The lock first: the policy's pins.dir is read once, from the file
	// that the entry is then written into.
	unlock, err := lockComposition(o.File)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unlock() }()
	dir, dirErr := PinsDir(o.File)
	var pinsDir string
	if !o.Trust {
		if dirErr != nil {
			return nil, dirErr
		}
		pinsDir = dir
		res.Held = "added by dsh-host add"
		if p.From != "" {
			res.Held += " from " + p.From
		}
	}
	// Variables need not be set where add runs (the secrets' are set
	// later, or only where the host runs): unset, they read as empty,
	// and defaults apply, as import reads them.
	env := func(k string) (string, bool) {
		v, _ := lookup(k)
		return v, true
	}
	for i, e := range p.Exports {
		_, p.Exports[i].Set = lookup(e.Var)
	}
	// restorePins puts the pins of an earlier server of this name back
	// when the write fails after the hold or --trust changed them.
	var restorePins func() error
	prepare := func(data []byte) error {
		if err := check(o.File, data, env); err != nil {
			return err
		}
		if dirErr == nil {
			if restorePins, err = pins.Snapshot(dir, name); err != nil {
				return fmt.Errorf("read the pins of %s: %w; nothing was written", name, err)
			}
		}
		// The hold is written before the entry: a host that reloads
		// the file the moment it changes finds the server held.
		if pinsDir != "" {
			if err := pins.HoldUntilReviewed(pinsDir, name, res.Held); err != nil {
				return fmt.Errorf("the server cannot be held until reviewed (%w); nothing was written (add --trust to add it trusted on first use)", err)
			}
		} else if o.Trust {
			// A server of this name before had its tools trusted:
			// they are not this one's.
			if dirErr == nil {
				if err := pins.Forget(dir, name); err != nil {
					return fmt.Errorf("the pins of an earlier server called %s cannot be deleted: %w; nothing was written", name, err)
				}
			}
		}
		return nil
	}
	head := "Added by dsh-host add."
	if p.From != "" {
		head = fmt.Sprintf("Added from %s (registry %s) by dsh-host add.", p.From, p.Registry)
	}
	if err := importer.AppendServers(target(o.File), []mcpservers.Imported{p.Server}, head, prepare); err != nil {
		if restorePins != nil {
			if rerr := restorePins(); rerr != nil {
				err = fmt.Errorf("%w; and the pins of %s could not be put back as they were: %v", err, name, rerr)
			}
		}
		return nil, err
	}
	res.Running = running(ctx, o.File)
	return res, nil
}

// check validates data, the composition file's new content, as `dsh-host
// check` does. A composition that had problems before is said to.
func check(file string, data []byte, env func(string) (string, bool)) error {
	problems := func(data []byte) error {
		c, err := host.ParseComposition(file, data, env)
		if c != nil {
			err = errors.Join(err, host.Check(c))
		}
		return err
	}
	err := problems(data)
	if err == nil {
		return nil
	}
	lines := "\n  " + strings.Join(hostrun.ProblemLines(err), "\n  ")
	if old, rerr := os.ReadFile(file); rerr == nil && problems(old) != nil {
		return fmt.Errorf("%s has problems already; fix them first (dsh-host check -c %s), nothing was written:%s", file, file, lines)
	}
	return fmt.Errorf("%s would not pass its checks with the entry, so nothing was written:%s", file, lines)
}

// PinsDir is the pins.dir of file's policy entry (the built-in default
// when it has none). A policy that keeps no pins cannot hold a server:
// that is an error saying so.
func PinsDir(file string) (string, error) {
	dir := policy.DefaultConfig().Pins.Dir
	// An unset variable reads as a mark, not as an error: an entry with
	// an error is left out of the composition, and the policy's would
	// leave the default dir. A dir that holds the mark depends on a
	// variable add cannot see; the host, started with it set, looks
	// elsewhere, and a hold anywhere else lets the tools through (fail
	// closed). ${VAR:-default} too: the host may have VAR.
	const unset = "\x00unset:"
	c, _ := host.ReadComposition(file, func(k string) (string, bool) {
		if v, ok := os.LookupEnv(k); ok {
			return v, true
		}
		return unset + k + "\x00", true
	})
	for _, e := range entries(c) {
		if e.ID == policy.PluginName {
			pc, err := host.Decode[policy.Config](&e)
			if err != nil {
				return "", err
			}
			if _, v, ok := strings.Cut(pc.Pins.Dir, unset); ok {
				v, _, _ = strings.Cut(v, "\x00")
				return "", fmt.Errorf("%s: the policy's pins.dir names $%s, which is not set here, so where the host keeps its pins is not known; set it, or add --trust to add the server trusted on first use", file, v)
			}
			dir = host.EntryPath(e.File, pc.Pins.Dir)
		}
	}
	if dir == "" {
		return "", fmt.Errorf("%s: the policy keeps no pins (pins.dir is empty), so the server's tools cannot be held until reviewed; add --trust to add it trusted on first use", file)
	}
	if !filepath.IsAbs(dir) {
		// Each process reads it from its own working directory: the
		// hold would not be where the host looks (fail closed).
		return "", fmt.Errorf("%s: the policy's pins.dir %q is relative, so where a host keeps its pins depends on the directory it starts in, and the hold would not be seen; make it absolute, or add --trust to add the server trusted on first use", file, dir)
	}
	return dir, nil
}

func entries(c *host.Composition) []host.Entry {
	if c == nil {
		return nil
	}
	return c.Entries
}

// running reports whether a host of file answers on its control socket.
func running(ctx context.Context, file string) bool {
	c, err := control.Dial(ctx, file)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// lockComposition serializes the adds and removes of one composition
// across processes: each reads the file, changes it and replaces it, and
// two at once would lose one's change. The lock is kept under $DSH_HOME,
// not beside the user's file.
func lockComposition(file string) (unlock func() error, err error) {
	abs, err := filepath.Abs(target(file))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(abs))
	path, err := dshhome.Path("locks", "composition-"+hex.EncodeToString(sum[:8])+".lock")
	if err != nil {
		return nil, err
	}
	if err := fsutil.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return fsutil.Lock(path)
}

// target is the file a write of file replaces: the file a symlink leads
// to (composition.yml -> dotfiles/real.yml stays a link), else file.
func target(file string) string {
	if t, err := filepath.EvalSymlinks(file); err == nil {
		return t
	}
	return file
}

// have is exec.LookPath as a yes or no.
func have(command string) bool {
	_, err := exec.LookPath(command)
	return err == nil
}
