package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// pages returns README.md and docs/*.md, the pages a reader reaches.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{filepath.Join("..", "README.md")}, docs...)
}

// binary builds cmd/dsh-host once for the package's tests: its -h output
// is the truth the docs are checked against, whatever shape cmd's code
// takes.
var binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "dsh-docs-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "dsh-host")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/dsh-host").CombinedOutput()
	if err != nil {
		return "", &buildError{err, string(out)}
	}
	return bin, nil
})

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string {
	return "go build ./cmd/dsh-host: " + e.err.Error() + "\n" + e.out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := binary(); err == nil {
		os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// dshHelp runs the built binary's -h for sub ("" for the top level) and
// returns what it prints; -h exits 0 or 2 as the flag package decides,
// so the exit code is not looked at, only that it printed.
func dshHelp(t *testing.T, sub string) string {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-h"}
	if sub != "" {
		args = []string{sub, "-h"}
	}
	out, _ := exec.Command(bin, args...).CombinedOutput()
	if len(out) == 0 {
		t.Fatalf("dsh-host %s -h printed nothing", sub)
	}
	return string(out)
}

// realFlags returns the subcommand set and a flagsOf that asks the
// binary.
func realFlags(t *testing.T) (map[string]bool, func(string) (map[string]bool, error)) {
	subs := helpSubcommands(dshHelp(t, ""))
	if !subs["run"] || !subs["serve"] {
		t.Fatalf("dsh-host -h lists no run or serve subcommand: %v", sorted(subs))
	}
	subs["help"] = true // dsh-host help SUBCOMMAND: dispatch's, not in the list
	return subs, func(sub string) (map[string]bool, error) {
		if sub == "help" {
			return map[string]bool{}, nil
		}
		fs := helpFlags(dshHelp(t, sub))
		if len(fs) == 0 {
			t.Errorf("dsh-host %s -h lists no flags after a Flags: line", sub)
		}
		return fs, nil
	}
}

func TestLinksResolve(t *testing.T) {
	for _, p := range checkLinks(pages(t)) {
		t.Error(p)
	}
}

func TestEveryPageReachableFromREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages(t)[1:] {
		if !strings.Contains(string(readme), "](docs/"+p+")") {
			t.Errorf("README.md does not link docs/%s: add it to \"Where to go next\"", p)
		}
	}
}

func TestDocumentedFlagsExist(t *testing.T) {
	subs, flagsOf := realFlags(t)
	n := 0
	for _, p := range pages(t) {
		pg, err := readPage(p)
		if err != nil {
			t.Fatal(err)
		}
		n += len(commands(pg, subs))
	}
	if n < 50 {
		t.Fatalf("found %d dsh-host commands in the docs; the parser lost them", n)
	}
	for _, p := range checkFlags(pages(t), subs, flagsOf) {
		t.Error(p)
	}
}

// TestCheckerCatches: on a small fixture, the checks find a missing
// file, a missing anchor, a made-up flag and a made-up subcommand, and
// pass what is right, against the real binary's flag sets.
func TestCheckerCatches(t *testing.T) {
	fixture := filepath.Join("testdata", "broken.md")
	links := strings.Join(checkLinks([]string{fixture}), "\n")
	for _, want := range []string{
		"broken.md:5: link nowhere.md: no file",
		"broken.md:6: link good.md#no-such-heading: testdata/good.md has no heading #no-such-heading",
		"broken.md:7: link #nor-this: testdata/broken.md has no heading #nor-this",
	} {
		if !strings.Contains(links, filepath.FromSlash(want)) {
			t.Errorf("link check misses %q; found:\n%s", want, links)
		}
	}
	if strings.Count(links, "\n")+1 != 3 {
		t.Errorf("link check finds more than the 3 broken links (the good ones must pass):\n%s", links)
	}
	subs, flagsOf := realFlags(t)
	flags := strings.Join(checkFlags([]string{fixture}, subs, flagsOf), "\n")
	for _, want := range []string{
		"broken.md:17: dsh-host call has no flag -no-such-flag",
		"broken.md:18: dsh-host has no subcommand \"frobnicate\"",
		"broken.md:14: dsh-host serve has no flag -made-up-too",
		"broken.md:22: dsh-host serve has no flag -made-up",
		"broken.md:25: dsh-host run has no flag -bogus",
	} {
		if !strings.Contains(flags, want) {
			t.Errorf("flag check misses %q; found:\n%s", want, flags)
		}
	}
	if strings.Count(flags, "\n")+1 != 5 {
		t.Errorf("flag check finds more than the 5 made-up flags and subcommands:\n%s", flags)
	}
}
