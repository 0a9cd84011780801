// Package childenv says what of the host's environment a child process
// keeps when it is to keep only what a program needs to run: a stdio MCP
// server under inheritEnv: minimal, and the workspace's run commands. The
// rest (the API keys of the agent's providers, the host's DSH_* settings
// and tokens) stays with the host unless a config names it.
package childenv

import (
	"fmt"
	"runtime"
	"strings"
)

// minimalNames are the variables Minimal passes, besides LC_*: path,
// home, user, shell, locale, terminal, temporary directory and time zone,
// and their Windows counterparts.
var minimalNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ",
	"SystemRoot", "ComSpec", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA",
	"TEMP", "TMP", "HOMEDRIVE", "HOMEPATH", "USERNAME", "windir",
}

// Minimal reports whether name is one of the variables a program needs
// to run (minimalNames, LC_*). fold compares without case, as Windows
// does (Path is PATH there).
func Minimal(name string, fold bool) bool {
	if strings.HasPrefix(name, "LC_") || (fold && strings.HasPrefix(strings.ToUpper(name), "LC_")) {
		return true
	}
	for _, m := range minimalNames {
		if name == m || (fold && strings.EqualFold(name, m)) {
			return true
		}
	}
	return false
}

// Keep returns the entries (NAME=value) of environ whose names Minimal
// passes or names lists, in environ's order; names compare without case
// on Windows only. An entry without a name is dropped.
func Keep(environ, names []string) []string {
	fold := runtime.GOOS == "windows"
	var out []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if Minimal(name, fold) || listed(name, names, fold) {
			out = append(out, kv)
		}
	}
	return out
}

func listed(name string, names []string, fold bool) bool {
	for _, n := range names {
		if name == n || (fold && strings.EqualFold(name, n)) {
			return true
		}
	}
	return false
}

// CheckName checks the name of a variable a config lists to pass: letters,
// digits and _, not starting with a digit. A NAME=value is refused saying
// that the list names variables of the host's environment, and sets none.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an empty name; list the names of variables to pass, such as GOPATH")
	case strings.Contains(name, "="):
		return fmt.Errorf("%q: list a variable's name alone; its value is the host's, and this list sets none", name)
	}
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("%q is not a variable's name: letters, digits and _, not starting with a digit (patterns such as AWS_* are not taken: list each name)", name)
		}
	}
	return nil
}
