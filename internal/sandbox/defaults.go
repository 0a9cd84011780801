package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// systemRead are what any program needs to read to run: shared libraries,
// the runtimes installed with the system, configuration and certificates
// (/etc), the kernel's views (/sys; of /proc, only the server's own and
// the system's entries: procRules) and the resolver's files. A missing
// one is left out.
var systemRead = []string{
	"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc",
	"/proc", "/sys", "/nix/store", "/run/systemd/resolve",
	"/dev/urandom", "/dev/random",
}

// systemWrite are the devices any program may write to.
var systemWrite = []string{"/dev/null", "/dev/zero", "/dev/full"}

// grants are the paths a server may read and write, and what the report
// says was left out.
type grants struct {
	read, write []string
	notes       []string
}

func (g *grants) addRead(paths ...string)  { g.read = append(g.read, paths...) }
func (g *grants) addWrite(paths ...string) { g.write = append(g.write, paths...) }

// childEnv looks a variable up in a child's environment (later entries
// win, as exec does).
func childEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// defaultGrants returns what the server cmd needs to run: the system's
// files, its runtime (the binary's directory and installation, the
// interpreter of a script, node's and Go's caches), the script or
// package it runs, its working directory and its roots.
func defaultGrants(cmd *exec.Cmd, dir, home string, roots []string) *grants {
	g := &grants{}
	g.addRead(systemRead...)
	g.addWrite(systemWrite...)
	r := runtimeGrants{g: g, env: cmd.Env, home: home, dir: dir}
	r.exe(cmd.Path, 0)
	for _, a := range cmd.Args[1:] {
		r.scriptArg(a)
	}
	switch {
	case holdsHome(dir, home):
		// Granting it would grant the whole home.
		g.notes = append(g.notes, fmt.Sprintf("its working directory %s is not granted, as it holds the home directory; set cwd", dir))
	default:
		g.addRead(dir)
	}
	g.addWrite(roots...)
	return g
}

// holdsHome reports whether granting p would grant the whole home (or
// the whole filesystem).
func holdsHome(p, home string) bool {
	return p == "/" || p == home || (home != "" && strings.HasPrefix(home, p+"/"))
}

// read grants p, unless it is or holds the home directory: a program
// installed in the home (~/bin/srv, ~/srv.js) gets what its runtime
// needs, never the home with ~/.ssh in it.
func (r *runtimeGrants) read(p string) {
	if holdsHome(p, r.home) {
		r.g.notes = append(r.g.notes, fmt.Sprintf("%s is not granted, as it holds the home directory; grant what the server needs with sandbox.read", p))
		return
	}
	r.g.addRead(p)
}

// runtimeGrants finds what the runtime of a command needs.
type runtimeGrants struct {
	g    *grants
	env  []string
	home string
	dir  string
}

// exe grants the executable path: its directory, its real directory, the
// installation it belongs to (the parent of a bin directory: node's prefix
// with npm in lib/node_modules, GOROOT, a Python virtualenv), the
// interpreter a script names on its #! line, and the caches of node and
// Go.
func (r *runtimeGrants) exe(path string, depth int) {
	if path == "" || depth > 2 {
		return
	}
	r.read(filepath.Dir(path))
	if filepath.Base(filepath.Dir(path)) == "shims" {
		// A version manager's shim (pyenv, rbenv, asdf: ~/.pyenv/shims/
		// python3) runs the manager from its root, which holds the
		// versions it picks from.
		r.read(filepath.Dir(filepath.Dir(path)))
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return
	}
	realDir := filepath.Dir(real)
	r.read(realDir)
	if i := strings.Index(real, "/node_modules/"); i >= 0 {
		// A package's program (node_modules/.bin/x, as npx runs it)
		// imports its dependencies from the node_modules above it.
		r.read(real[:i+len("/node_modules")])
	}
	if prefix := filepath.Dir(realDir); filepath.Base(realDir) == "bin" && prefix != "/" {
		r.installation(prefix)
	}
	switch base := filepath.Base(path); {
	case base == "npx" || base == "npm":
		r.npmCache()
	case base == "go":
		r.goEnv(real)
	case strings.HasPrefix(base, "python"):
		r.g.addRead(filepath.Join(r.home, ".local", "lib"))
	}
	if interp := shebang(real); interp != "" {
		if filepath.Base(interp) == "env" {
			return
		}
		r.exe(interp, depth+1)
	}
	if name := envShebang(real); name != "" {
		if p := lookPath(name, childEnv(r.env, "PATH")); p != "" {
			r.exe(p, depth+1)
		}
	}
}

// installation grants the installation a bin directory belongs to. One
// in the home (~/.cargo, ~/.local, a virtualenv) may hold more than its
// programs (~/.cargo/credentials.toml), so only what a runtime reads of
// it is granted there: its lib directory and a virtualenv's pyvenv.cfg.
// Go's root is granted by goEnv.
func (r *runtimeGrants) installation(prefix string) {
	if r.home == "" || !strings.HasPrefix(prefix, r.home+"/") {
		r.read(prefix)
		return
	}
	for _, p := range []string{filepath.Join(prefix, "lib"), filepath.Join(prefix, "pyvenv.cfg")} {
		if _, err := os.Stat(p); err == nil {
			r.read(p)
		}
	}
}

// npmCache grants npm's cache, where npx keeps the packages it runs.
func (r *runtimeGrants) npmCache() {
	cache := childEnv(r.env, "npm_config_cache")
	if cache == "" && r.home != "" {
		cache = filepath.Join(r.home, ".npm")
	}
	if cache == "" {
		return
	}
	// npx creates it anyway; it must exist to be granted.
	_ = os.MkdirAll(cache, 0o700)
	r.g.addWrite(cache)
}

// scriptArg grants the script or package a runtime was given as an
// argument: the node_modules directory holding it, else the project it
// belongs to (the nearest directory above with package.json, go.mod or
// pyproject.toml), else its directory. Directories are not granted: a
// server given one to serve gets it through read or write.
func (r *runtimeGrants) scriptArg(a string) {
	if strings.HasPrefix(a, "-") {
		return
	}
	p := a
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.dir, p)
	}
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	if i := strings.Index(p, "/node_modules/"); i >= 0 {
		r.read(p[:i+len("/node_modules")])
		return
	}
	for d := filepath.Dir(p); d != "/" && d != r.home && d != "."; d = filepath.Dir(d) {
		for _, marker := range []string{"package.json", "go.mod", "pyproject.toml"} {
			if _, err := os.Stat(filepath.Join(d, marker)); err == nil {
				r.read(d)
				return
			}
		}
	}
	if d := filepath.Dir(p); holdsHome(d, r.home) {
		r.read(p) // a script in the home itself: that file, not the home
	} else {
		r.read(d)
	}
}

// goEnv grants what `go run` needs: GOROOT and the module cache to read,
// the build cache to write, the go env file, and the module around the
// working directory (go looks for go.mod upwards).
func (r *runtimeGrants) goEnv(goPath string) {
	e := goEnvOf(goPath, r.env, r.dir)
	if e.root != "" {
		r.g.addRead(e.root)
	}
	if e.modCache != "" {
		r.g.addRead(e.modCache)
	}
	if e.envFile != "" {
		r.g.addRead(e.envFile)
	}
	if e.cache != "" {
		_ = os.MkdirAll(e.cache, 0o700)
		r.g.addWrite(e.cache)
	}
	for d := r.dir; d != "/" && d != r.home && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			r.g.addRead(d)
			break
		}
	}
}

type goPaths struct{ root, modCache, cache, envFile string }

// goEnvCache keeps `go env` answers: asking costs a process start.
var goEnvCache sync.Map // key string → goPaths

func goEnvOf(goPath string, env []string, dir string) goPaths {
	key := goPath
	for _, k := range []string{"GOROOT", "GOPATH", "GOMODCACHE", "GOCACHE", "GOENV", "HOME", "XDG_CACHE_HOME"} {
		key += "\x00" + childEnv(env, k)
	}
	if v, ok := goEnvCache.Load(key); ok {
		return v.(goPaths)
	}
	cmd := exec.Command(goPath, "env", "GOROOT", "GOMODCACHE", "GOCACHE", "GOENV")
	cmd.Env = env
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return goPaths{}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 {
		return goPaths{}
	}
	p := goPaths{root: lines[0], modCache: lines[1], cache: lines[2], envFile: lines[3]}
	if p.cache == "off" {
		p.cache = ""
	}
	goEnvCache.Store(key, p)
	return p
}

// shebang returns the interpreter a script's #! line names, or "".
func shebang(path string) string {
	fields := shebangFields(path)
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// envShebang returns the program of a "#!/usr/bin/env name" line, or "".
func envShebang(path string) string {
	fields := shebangFields(path)
	if len(fields) < 2 || filepath.Base(fields[0]) != "env" {
		return ""
	}
	for _, f := range fields[1:] {
		if !strings.HasPrefix(f, "-") {
			return f
		}
	}
	return ""
}

func shebangFields(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("#!"))
	if !ok {
		return nil
	}
	return strings.Fields(string(rest))
}

// lookPath finds name in path, a PATH value.
func lookPath(name, path string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// existing returns the paths that exist, once each, in order.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		p = filepath.Clean(p)
		if slices.Contains(out, p) {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
