package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Prepared is what Prepare did to a server's command before its start.
type Prepared struct {
	// Note says what was done, for the log ("" when nothing was).
	Note string
	// Warning, when set, says the runtime runs as it is, with a cache
	// it may write (a form Prepare does not know), to be logged once.
	Warning string
	dir     string
}

// Cleanup removes what Prepare made (a built binary); call it once the
// server has exited.
func (p *Prepared) Cleanup() {
	if p != nil && p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

// Prepare does, outside the sandbox and with the host's rights and
// network, what a runtime would otherwise do inside it with write access
// to a cache shared with later unsandboxed runs, and rewrites cmd (made as
// for Start) to run what it prepared:
//
//   - `npx [-y] pkg args` installs the package as npx does (`npm exec
//     --yes --package=pkg`), and the server is then the package's
//     program in npx's install directory, with args: it needs no network
//     (connect: [] holds), no npm and no write access to npm's cache,
//     only its package's node_modules to read;
//   - `go run [flags] pkg [args]` builds pkg with `go build` into a
//     directory of Prepare's own and runs the binary, so that the server
//     needs neither Go's build cache nor its module cache.
//
// Under mode off, or for another command, it does nothing. A failed fetch
// or build is an error naming the command that failed; the server is not
// started. ctx bounds the fetch or build.
func Prepare(ctx context.Context, cmd *exec.Cmd, cfg Config) (*Prepared, error) {
	if cfg.EffectiveMode() == ModeOff || cmd.Err != nil {
		return &Prepared{}, nil
	}
	if abi, _ := Support(); abi == 0 {
		return &Prepared{}, nil // unsandboxed anyway: the runtime does as it does
	}
	prep, err := &Prepared{}, error(nil)
	switch filepath.Base(cmd.Path) {
	case "npx":
		prep, err = prepareNpx(ctx, cmd)
	case "go":
		if len(cmd.Args) > 1 && cmd.Args[1] == "run" {
			prep, err = prepareGoRun(ctx, cmd)
		}
	}
	if err == nil && prep.Warning != "" && cfg.EffectiveMode() == ModeStrict {
		// A form run as it is writes a cache later unsandboxed runs
		// read: strict does not start it.
		prep.Cleanup()
		return nil, fmt.Errorf("sandbox.mode is strict, but %s; the server was not started", prep.Warning)
	}
	return prep, err
}

// NpxPackages returns the packages `npx args` runs (its --package
// values, else its first argument that is not a flag) and cmd, the index
// in args of that first argument (the package, or with --package the
// command), after which come the server's own arguments; cmd is
// len(args) where there is none. ok is false for a form it does not know
// (-c, --call), which then runs as it is. It is the one reading of npx's
// arguments: Prepare's and the import's (mcpservers).
func NpxPackages(args []string) (pkgs []string, cmd int, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case a == "-y" || a == "--yes" || a == "--no-install" || a == "-q" || a == "--quiet":
		case a == "-p" || a == "--package":
			if i+1 >= len(args) {
				return nil, len(args), false
			}
			pkgs = append(pkgs, args[i+1])
			i++
		case strings.HasPrefix(a, "--package="):
			pkgs = append(pkgs, strings.TrimPrefix(a, "--package="))
		case strings.HasPrefix(a, "-"):
			return nil, len(args), false // -c, --call, a flag of npm's: not ours to guess
		default:
			if len(pkgs) == 0 {
				return []string{a}, i, true
			}
			return pkgs, i, true
		}
	}
	return pkgs, len(args), len(pkgs) > 0
}

func prepareNpx(ctx context.Context, cmd *exec.Cmd) (*Prepared, error) {
	pkgs, at, ok := NpxPackages(cmd.Args[1:])
	if !ok {
		return &Prepared{Warning: "npx " + strings.Join(cmd.Args[1:], " ") + " is not of the form npx [-y] [--package P] PKG ...: it runs as it is, fetching inside the sandbox (grant connect: [443]) into a cache it may write"}, nil
	}
	npm := filepath.Join(filepath.Dir(cmd.Path), "npm")
	if _, err := os.Stat(npm); err != nil {
		if npm, err = exec.LookPath("npm"); err != nil {
			return nil, fmt.Errorf("sandbox: npx fetches its packages with npm before the sandboxed start, and there is no npm beside %s nor in PATH", cmd.Path)
		}
	}
	// npm exec installs the packages as npx would and runs a shell
	// with their bin directory first in PATH: that directory is what
	// the server then runs from. Their install scripts are not run: they
	// would run here, outside the sandbox, with the host's rights.
	args := []string{"exec", "--yes", "--ignore-scripts"}
	for _, p := range pkgs {
		args = append(args, "--package="+p)
	}
	args = append(args, "--", "sh", "-c", `printf '%s' "$PATH"`)
	fetch := exec.CommandContext(ctx, npm, args...)
	fetch.Env, fetch.Dir = cmd.Env, cmd.Dir
	var stderr strings.Builder
	fetch.Stderr = &stderr
	out, err := fetch.Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: fetch %s before the sandboxed start (npm %s): %w%s", strings.Join(pkgs, ", "), strings.Join(args[:len(args)-4], " "), err, quoteOutput([]byte(stderr.String())))
	}
	bin, rest, err := npxBin(string(out), pkgs, cmd.Args[1:], at)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s was fetched, but %v", strings.Join(pkgs, ", "), err)
	}
	cmd.Path = bin
	cmd.Args = append([]string{bin}, rest...)
	return &Prepared{Note: "fetched " + strings.Join(pkgs, ", ") + " outside the sandbox; it runs as " + bin}, nil
}

// npxBin finds the program `npx args` runs, in the bin directory npm
// exec put first in path, and the arguments it gets: args[at] (as
// NpxPackages found it) with --package, the command named; else the
// package's own bin (its only one, or the one named as the package).
func npxBin(path string, pkgs []string, args []string, at int) (bin string, rest []string, err error) {
	var dir string
	for _, d := range filepath.SplitList(path) {
		if strings.HasSuffix(d, "/node_modules/.bin") {
			dir = d
			break
		}
	}
	if dir == "" {
		return "", nil, fmt.Errorf("npm exec named no node_modules/.bin directory to run it from")
	}
	if at >= len(args) {
		return "", nil, fmt.Errorf("npx names no package or command to run")
	}
	name, rest := args[at], args[at+1:]
	if !slices.ContainsFunc(args[:at], func(a string) bool { return a == "-p" || a == "--package" || strings.HasPrefix(a, "--package=") }) {
		if name, err = packageBin(filepath.Dir(dir), pkgs[0]); err != nil {
			return "", nil, err
		}
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		// A package's bin names a file in .bin, nothing beside it.
		return "", nil, fmt.Errorf("its program %q is not a name in %s", name, dir)
	}
	bin = filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		return "", nil, fmt.Errorf("its program %s is not there: %w", bin, errors.Unwrap(err))
	}
	return bin, rest, nil
}

// packageBin returns the bin npx runs of the package spec installed in
// nodeModules: the only one, or the one named as the package.
func packageBin(nodeModules, spec string) (string, error) {
	name := spec
	if at := strings.LastIndex(name, "@"); at > 0 {
		name = name[:at]
	}
	b, err := os.ReadFile(filepath.Join(nodeModules, name, "package.json"))
	if err != nil {
		return "", fmt.Errorf("its package.json cannot be read (is %q a registry package?): %w", spec, err)
	}
	var pj struct {
		Name string          `json:"name"`
		Bin  json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		return "", fmt.Errorf("its package.json: %w", err)
	}
	base := pj.Name[strings.LastIndex(pj.Name, "/")+1:]
	var one string
	if json.Unmarshal(pj.Bin, &one) == nil && one != "" {
		return base, nil
	}
	var bins map[string]string
	if json.Unmarshal(pj.Bin, &bins) != nil || len(bins) == 0 {
		return "", fmt.Errorf("%s has no bin to run", pj.Name)
	}
	if len(bins) == 1 {
		for k := range bins {
			return k, nil
		}
	}
	if _, ok := bins[base]; ok {
		return base, nil
	}
	return "", fmt.Errorf("%s has several bins and none named %s: name one with npx --package %s BIN", pj.Name, base, spec)
}

// goRunValueFlags are the build flags of go run that take a separate value.
func goRunValueFlags() []string {
	return []string{"-C", "-p", "-asmflags", "-buildmode", "-compiler", "-gccgoflags", "-gcflags",
		"-installsuffix", "-ldflags", "-mod", "-modfile", "-overlay", "-pgo", "-pkgdir", "-tags", "-toolexec",
		"-covermode", "-coverpkg"}
}

func prepareGoRun(ctx context.Context, cmd *exec.Cmd) (*Prepared, error) {
	args := cmd.Args[2:]
	var flags, pkg, rest []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		name = "-" + strings.TrimPrefix(name, "-")
		if name == "-exec" || name == "-o" {
			// Not a plain run: leave it to go run.
			return &Prepared{Warning: "go run " + a + " runs as it is, with a build cache it may write"}, nil
		}
		flags = append(flags, a)
		if !hasValue && slices.Contains(goRunValueFlags(), name) {
			if i+1 >= len(args) {
				return &Prepared{}, nil // go run will say what is wrong
			}
			flags = append(flags, args[i+1])
			i++
		}
	}
	// The package: .go files, or one path or pattern.
	for ; i < len(args) && strings.HasSuffix(args[i], ".go"); i++ {
		pkg = append(pkg, args[i])
	}
	if len(pkg) == 0 && i < len(args) {
		pkg = []string{args[i]}
		i++
	}
	if len(pkg) == 0 {
		return &Prepared{}, nil
	}
	rest = args[i:]
	dir, err := os.MkdirTemp("", "dsh-sandbox-build-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: a directory for the server's build: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(strings.Split(pkg[0], "@")[0]), ".go")
	if name == "." || name == "" || name == "/" {
		name = "server"
	}
	bin := filepath.Join(dir, name)
	// go run itself, with echo as its -exec, names the executable it
	// built or found in its cache (Go 1.24 and later keep it there),
	// which is copied: as fast as a warm go run. Where that fails (an
	// older Go removes it on exit), go build links it again.
	locate := exec.CommandContext(ctx, cmd.Path, append(append([]string{"run", "-exec", "echo"}, flags...), pkg...)...)
	locate.Env, locate.Dir = cmd.Env, cmd.Dir
	var stderr strings.Builder
	locate.Stderr = &stderr
	out, err := locate.Output()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox: build %s before the sandboxed start (go run -exec echo): %w%s", strings.Join(pkg, " "), err, quoteOutput([]byte(stderr.String())))
	}
	if copyFile(strings.TrimSpace(string(out)), bin) != nil {
		build := exec.CommandContext(ctx, cmd.Path, append(append([]string{"build", "-o", bin}, flags...), pkg...)...)
		build.Env, build.Dir = cmd.Env, cmd.Dir
		if out, err := build.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("sandbox: build %s before the sandboxed start (go build): %w%s", strings.Join(pkg, " "), err, quoteOutput(out))
		}
	}
	cmd.Path = bin
	cmd.Args = append([]string{bin}, rest...)
	return &Prepared{dir: dir, Note: "built " + strings.Join(pkg, " ") + " outside the sandbox; the binary runs inside, without Go's caches"}, nil
}

// copyFile copies the executable src to dst.
func copyFile(src, dst string) error {
	if !filepath.IsAbs(src) || strings.ContainsAny(src, "\n ") {
		return errors.New("not one absolute path")
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

// quoteOutput quotes the end of a failed fetch's or build's output.
func quoteOutput(out []byte) string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return ""
	}
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return ": " + s
}
