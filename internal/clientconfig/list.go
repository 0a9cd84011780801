package clientconfig

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Connection is what one client file says about dsh-host.
type Connection struct {
	Client string
	// File is the client's file; "" when the client has none here.
	File string
	// Entries are its dsh-host entries, each "NAME → composition" or
	// "NAME → URL"; none when it is not connected.
	Entries []string
	// Err says why the file could not be read.
	Err error
}

// List says, for every client, whether its user file (and, when project
// is set, its file in that directory) reaches dsh-host, and which
// composition: an entry that starts dsh-host serve, or the HTTP entry a
// connect wrote (its backup names it).
func List(env Env, project, stateDir string) []Connection {
	var out []Connection
	for _, c := range clients {
		paths := []string{c.file(env, "")}
		if project != "" {
			paths = append(paths, c.file(env, project))
		}
		for _, named := range paths {
			if _, err := os.Lstat(named); err != nil {
				continue
			}
			out = append(out, listFile(c, named, stateDir))
		}
		if !slices.ContainsFunc(out, func(cn Connection) bool { return cn.Client == c.name }) {
			out = append(out, Connection{Client: c.name})
		}
	}
	return out
}

func listFile(c *client, named, stateDir string) Connection {
	cn := Connection{Client: c.name, File: named}
	file, _, err := resolve(named)
	if err != nil {
		cn.Err = err
		return cn
	}
	text, err := readFile(file)
	if err != nil {
		cn.Err = err
		return cn
	}
	doc, err := c.decode(text)
	if err != nil {
		cn.Err = fmt.Errorf("%s: %w", file, err)
		return cn
	}
	list := servers(doc, c.list(doc))
	var recNames []string // every name connect wrote, not only the last
	if rec, err := loadRecord(recordPath(stateDir, c.name, file)); err == nil {
		recNames = rec.names()
	}
	for _, k := range slices.Sorted(maps.Keys(list)) {
		if comp, ok := isDshHost(list[k]); ok {
			cn.Entries = append(cn.Entries, k+" → "+comp)
			continue
		}
		if slices.Contains(recNames, k) {
			m, _ := list[k].(map[string]any)
			for _, key := range []string{"url", "httpUrl"} {
				if u, ok := m[key].(string); ok {
					cn.Entries = append(cn.Entries, k+" → "+u)
				}
			}
		}
	}
	return cn
}

// Executable returns the absolute path of the running dsh-host, for a
// client to start. A build of `go run` is refused: it lives in a
// temporary directory that is gone once go run ends.
func Executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the dsh-host executable: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, CheckExecutable(exe)
}

// CheckExecutable refuses a path in go run's (or go test's) temporary
// build directory.
func CheckExecutable(exe string) error {
	sep := string(filepath.Separator)
	for _, part := range strings.Split(filepath.ToSlash(exe), "/") {
		if strings.HasPrefix(part, "go-build") {
			return errors.New("this dsh-host is go run's temporary build (" + exe + "), which is deleted when it ends, so a client could not start it: install it first (go install ./cmd/dsh-host, then make sure $(go env GOPATH)" + sep + "bin is on PATH) and run the installed dsh-host connect")
		}
	}
	return nil
}
