// Package workspace is the in-process plugin that lets chat's model work
// on the files of one directory, as Claude Code's and Codex's built-in
// tools do: list, read and search (marked readOnlyHint, so chat calls
// them without asking), edit and write files, and run a shell command
// (which chat's policy asks about first, services/policy).
//
// Everything stays inside the directory: paths go through an os.Root,
// which refuses `..`, absolute paths and symlinks that lead out, checked
// per component as the file is opened (no window between a check and
// the open). run's command starts in the stdio servers' sandbox
// (internal/sandbox): it may write the directory and nothing else of the
// user's, and reach no network unless the entry says network: true; and
// it gets only the variables of the host's environment a program needs,
// and those the entry's env lists.
//
// It is also the example of docs/writing-plugins.md: a config with
// defaults and checks, tools made with tools.Func, and a resource (the
// directory's handle) closed with the instance's scope.
package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/childenv"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/services/tools"
)

// PluginName is the plugin's registered name.
const PluginName = "workspace"

// Config is the entry's config.
type Config struct {
	// Dir is the directory the tools work in; "" is the host's working
	// directory when the instance starts.
	Dir string `yaml:"dir"`
	// Network lets run's commands connect anywhere over TCP and UDP; by
	// default they reach no network.
	Network bool `yaml:"network"`
	// Sandbox is run's sandbox mode: strict (the default: a system
	// without Landlock refuses to run commands), auto (runs them
	// unsandboxed there, with a warning) or off.
	Sandbox string `yaml:"sandbox"`
	// Timeout bounds one command (default 2m); a call may ask for less.
	Timeout time.Duration `yaml:"timeout"`
	// MaxOutput caps what a command's output returns, in bytes (default
	// 30000); the rest is counted, not kept.
	MaxOutput int `yaml:"maxOutput"`
	// Env names the variables of the host's environment that run's
	// commands get besides the minimal ones (childenv.Minimal: PATH,
	// HOME, LANG, LC_*, TERM, TMPDIR, USER, SHELL...). Nothing else of
	// it reaches them: not the API keys of chat's model, nor the host's
	// DSH_* settings and tokens.
	Env []string `yaml:"env"`
}

// Defaults of the config.
const (
	DefaultTimeout   = 2 * time.Minute
	DefaultMaxOutput = 30000
)

func defaults() Config {
	return Config{Sandbox: sandbox.ModeStrict, Timeout: DefaultTimeout, MaxOutput: DefaultMaxOutput}
}

func validate(c *Config) error {
	var errs []error
	switch c.Sandbox {
	case sandbox.ModeStrict, sandbox.ModeAuto, sandbox.ModeOff:
	default:
		errs = append(errs, host.KeyErrorf("sandbox", "unknown mode %q; want strict, auto or off", c.Sandbox))
	}
	if c.Timeout <= 0 {
		errs = append(errs, host.KeyErrorf("timeout", "%v: a command needs a positive timeout, such as 2m", c.Timeout))
	}
	if c.MaxOutput <= 0 || c.MaxOutput > 10<<20 {
		errs = append(errs, host.KeyErrorf("maxOutput", "%d: a number of bytes between 1 and %d", c.MaxOutput, 10<<20))
	}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		errs = append(errs, host.KeyErrorf("dir", "%q is not an absolute path", c.Dir))
	}
	for i, name := range c.Env {
		key := fmt.Sprintf("env[%d]", i)
		if err := childenv.CheckName(name); err != nil {
			errs = append(errs, host.KeyErrorf(key, "%w", err))
		} else if slices.Contains(c.Env[:i], name) {
			errs = append(errs, host.KeyErrorf(key, "%s is listed twice", name))
		}
	}
	return errors.Join(errs...)
}

func init() {
	host.Register(host.Definition[Config]{
		Name:        PluginName,
		Description: "chat's tools on one directory: list, read, search, edit, write, run (in the sandbox)",
		Inject:      []host.Dep{host.Require(tools.Key)},
		Defaults:    defaults,
		Validate:    validate,
		Claims: func(*Config) []host.Claim {
			var cs []host.Claim
			for _, n := range toolNames() {
				cs = append(cs, host.Claim{Kind: "tool", Value: n})
			}
			return cs
		},
		Apply: apply,
	})
}

func toolNames() []string { return []string{"list", "read", "search", "edit", "write", "run"} }

func apply(s *host.Scope, cfg Config) error {
	w, err := Open(cfg)
	if err != nil {
		return err
	}
	s.OnDispose("workspace directory", w.Close)
	w.logger = s.Logger()
	// Less every variable an entry names as its secret (the gateway's
	// token), even one env lists.
	w.environ = s.Environ
	reg := host.Get(s, tools.Key)
	for _, d := range w.Definitions() {
		if _, err := reg.Register(s, d); err != nil {
			return err
		}
	}
	s.SetDetail(w.dir)
	return nil
}

// Open returns the workspace of cfg on its directory. cfg is checked
// again: a Config made in Go, without the entry's defaults, would leave
// Sandbox "" (the sandbox's auto, which runs unsandboxed where it cannot
// sandbox) and no timeout; it is refused instead.
func Open(cfg Config) (*Workspace, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("workspace: the working directory: %w", err)
		}
		dir = wd
	}
	// The real path: what the sandbox grants and what absolute paths are
	// compared with.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, host.KeyErrorf("dir", "%v", err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, host.KeyErrorf("dir", "%v", err)
	}
	return &Workspace{cfg: cfg, dir: real, root: root, logger: discard(), environ: os.Environ}, nil
}

// Close releases the directory.
func (w *Workspace) Close() error { return w.root.Close() }

// Dir is the directory's real path.
func (w *Workspace) Dir() string { return w.dir }

// rel turns a model's path into one relative to the directory: relative
// paths as they are, absolute ones only when inside it. The os.Root
// refuses the rest again as each component is opened.
func (w *Workspace) rel(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(w.dir, filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return "", fmt.Errorf("%s is outside the working directory %s", p, w.dir)
		}
		p = r
	}
	p = filepath.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%s is outside the working directory %s", p, w.dir)
	}
	return p, nil
}

// escape rewords an os.Root refusal so that the model reads what to do.
func escape(p string, err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%s leads outside the working directory (a symlink or ..): refused", p)
	}
	return err
}
