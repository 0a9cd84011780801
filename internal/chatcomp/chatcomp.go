// Package chatcomp finds the composition `dsh-host chat` runs, so that
// chat works from any directory: the one named with -c; else
// composition.yml where chat starts; else the user's own chat
// composition, $DSH_HOME/chat.yml (~/.dsh/chat.yml); else the built-in
// workspace composition: the agent, the workspace plugin on the working
// directory and the built-in policy (chat asks before edit, write and
// run), and no MCP server the user did not ask for.
package chatcomp

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

// UserFile is the user's chat composition, under DSH_HOME.
const UserFile = "chat.yml"

// BuiltinName is the name the built-in composition goes by, beside the
// working directory: its sessions are that directory's.
const BuiltinName = "(built-in workspace composition)"

// Builtin is the built-in workspace composition.
const Builtin = `# dsh-host chat's built-in composition, where there is no composition.yml
# and no $DSH_HOME/chat.yml: the model (DeepSeek by default: DEEPSEEK_API_KEY)
# and the workspace's tools on the working directory. The built-in policy
# asks before edit, write and run.
plugins:
  - id: workspace
    name: workspace
  - id: agent
    name: agent
`

// Source says which composition Load found.
type Source int

const (
	Named   Source = iota // -c, or composition.yml in the working directory
	User                  // $DSH_HOME/chat.yml
	BuiltIn               // Builtin
)

// Load reads the composition chat runs: file when named (the user gave
// -c) or present; else the user's; else the built-in one. path is what
// the composition goes by (sessions, messages).
func Load(file string, named bool) (c *host.Composition, path string, src Source, err error) {
	if named || exists(file) {
		c, err = hostrun.Load(file)
		return c, file, Named, err
	}
	if user, perr := dshhome.Path(UserFile); perr == nil && exists(user) {
		c, err = hostrun.Load(user)
		return c, user, User, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, "", BuiltIn, err
	}
	path = filepath.Join(wd, BuiltinName)
	c, err = host.ParseComposition(path, []byte(Builtin), nil)
	return c, path, BuiltIn, err
}

// exists reports whether p is there; a file that cannot be checked
// (permissions) counts as there, so that reading it says why.
func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, fs.ErrNotExist)
}
