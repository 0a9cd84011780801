package clientconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-host/dsh-host/internal/dshhome"
)

// Synopsis and About are `dsh-host connect`'s help.
const (
	Synopsis = "CLIENT [-c FILE | --http URL [--token-env VAR]] [--move] [--project DIR] [--yes | --dry-run] | --undo CLIENT | --list"
	About    = `
Point an MCP client at this composition: write one entry, "dsh", into the
client's own config file, which starts the installed dsh-host as
"dsh-host serve --stdio -c <absolute path of FILE>" (or reaches a running
gateway with --http). CLIENT is one of: claude-code (~/.claude.json), codex
(~/.codex/config.toml, with mcp_call approved), gemini
(~/.gemini/settings.json), opencode (~/.config/opencode/opencode.json),
cursor (~/.cursor/mcp.json), vscode (the user's mcp.json); --project DIR
writes the project's file there instead (.mcp.json, .codex/config.toml,
.gemini/settings.json, opencode.json, .cursor/mcp.json, .vscode/mcp.json).

The change is shown as a diff and asked for on a terminal; every other byte
of the file (settings, comments, order) stays as it was. The file before
the first connect is kept under $DSH_HOME/connect; --undo restores it
exactly, or, once the client wrote the file since, takes out only what
connect changed and keeps the rest. --move first imports the client's
other servers into the composition (as import --write does) and removes
them from the client, so that it reaches them only through dsh-host: one
place for policy, pins, audit and sandbox. --list shows which clients on
this machine reach dsh-host, and which composition.

  dsh-host connect claude-code -c ~/dsh/composition.yml
  dsh-host connect codex --move --dry-run
  dsh-host connect vscode --http http://127.0.0.1:8931/mcp --token-env DSH_TOKEN
  dsh-host connect --undo claude-code`
)

// DefaultEnv is this machine's: the home directory and the environment.
func DefaultEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("find the home directory: %w", err)
	}
	return Env{Home: home, Getenv: os.Getenv}, nil
}

// StateDir is where the backups are: $DSH_HOME/connect.
func StateDir() (string, error) { return dshhome.Path("connect") }

// Render writes the connections as lines: the client, its file with "~"
// for the home directory, and what it reaches.
func Render(list []Connection, home string) string {
	var b strings.Builder
	for _, c := range list {
		file := c.File
		if rel, err := filepath.Rel(home, file); err == nil && !strings.HasPrefix(rel, "..") && home != "" {
			file = filepath.Join("~", rel)
		}
		switch {
		case c.Err != nil:
			fmt.Fprintf(&b, "%-12s %s: %v\n", c.Client, file, c.Err)
		case c.File == "":
			fmt.Fprintf(&b, "%-12s no config file\n", c.Client)
		case len(c.Entries) == 0:
			fmt.Fprintf(&b, "%-12s %s: not connected\n", c.Client, file)
		default:
			fmt.Fprintf(&b, "%-12s %s: %s\n", c.Client, file, strings.Join(c.Entries, "; "))
		}
	}
	return b.String()
}

// Composition returns the composition's absolute path, for a client that
// starts dsh-host from its own directory. It must exist: a client pointed
// at a missing file would only fail later, out of sight.
func Composition(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("the composition %s: %w (give its path with -c)", abs, err)
	} else if !info.Mode().IsRegular() {
		return "", fmt.Errorf("the composition %s is not a file", abs)
	}
	return abs, nil
}

// Summary says what Apply did, and how to undo it.
func (p *Plan) Summary() string {
	if p.undo {
		switch {
		case p.Remove:
			return fmt.Sprintf("%s: removed (connect had created it)", p.File)
		case !p.rec.Existed && !p.Exists:
			return fmt.Sprintf("%s: gone already (connect had created it); its backup is dropped", p.File)
		case p.reversed:
			return fmt.Sprintf("%s: connect's change undone; what changed in it since is kept", p.File)
		}
		return fmt.Sprintf("%s: restored", p.File)
	}
	s := fmt.Sprintf("%s: %s reaches dsh-host as %q", p.File, p.Client, p.rec.Name)
	if len(p.Moved) > 0 {
		s += fmt.Sprintf("; moved into %s: %s", p.Comp, strings.Join(p.Moved, ", "))
	}
	return s + fmt.Sprintf(". Restart the client to pick it up; undo with: dsh-host connect --undo %s", p.Client)
}

// Request is what `dsh-host connect` was asked, before anything on this
// machine is looked up.
type Request struct {
	Client string
	// File is the composition, as given (-c); made absolute.
	File          string
	URL, TokenEnv string
	Project, Name string
	Move, Undo    bool
}

// PlanFor looks up what req needs on this machine (the home directory,
// $DSH_HOME, the composition, the running dsh-host) and plans it.
func PlanFor(req Request) (*Plan, error) {
	env, err := DefaultEnv()
	if err != nil {
		return nil, err
	}
	state, err := StateDir()
	if err != nil {
		return nil, err
	}
	o := Options{Client: req.Client, Env: env, Name: req.Name, Move: req.Move, StateDir: state,
		Target: Target{URL: req.URL, TokenEnv: req.TokenEnv}}
	if req.Project != "" {
		if o.Project, err = filepath.Abs(req.Project); err != nil {
			return nil, err
		}
	}
	if req.Undo {
		return Undo(o)
	}
	if req.URL == "" || req.Move {
		if o.Target.Composition, err = Composition(req.File); err != nil {
			return nil, err
		}
	}
	if req.URL == "" {
		if o.Target.Executable, err = Executable(); err != nil {
			return nil, err
		}
	}
	return Prepare(o)
}

// ListHere is List for this machine, rendered.
func ListHere(project string) (string, error) {
	env, err := DefaultEnv()
	if err != nil {
		return "", err
	}
	state, err := StateDir()
	if err != nil {
		return "", err
	}
	if project != "" {
		if project, err = filepath.Abs(project); err != nil {
			return "", err
		}
	}
	return Render(List(env, project, state), env.Home), nil
}
