package cli

import (
	"bytes"
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestDispatch: no arguments, or flags only, run the first command; help
// lists every command, help NAME is NAME -h; --version runs version; an
// unknown name is a usage error that lists them on stderr.
func TestDispatch(t *testing.T) {
	var ran []string
	cmd := func(name string) Command[*[]string] {
		return Command[*[]string]{Name: name, Summary: name + " things", Run: func(_ context.Context, args []string, got *[]string) int {
			*got = append(*got, name+" "+strings.Join(args, " "))
			return 7
		}}
	}
	cmds := []Command[*[]string]{cmd("run"), cmd("tools"), cmd("version")}
	for _, tt := range []struct {
		args     []string
		code     int
		ran      string
		out, err string
	}{
		{nil, 7, "run ", "", ""},
		{[]string{"-c", "x.yml"}, 7, "run -c x.yml", "", ""},
		{[]string{"tools", "--json"}, 7, "tools --json", "", ""},
		{[]string{"--version"}, 7, "version ", "", ""},
		{[]string{"help", "tools"}, 7, "tools -h", "", ""},
		{[]string{"--help"}, ExitOK, "", "  tools     tools things\n", ""},
		{[]string{"help"}, ExitOK, "", "Run 'dsh-host <subcommand> -h'", ""},
		{[]string{"nope"}, ExitUsage, "", "", "dsh-host: unknown subcommand \"nope\"\n\ndsh-host runs a composition"},
	} {
		ran = nil
		var out, errw bytes.Buffer
		code := Dispatch(context.Background(), tt.args, &ran, &out, &errw, cmds)
		got := strings.Join(ran, ";")
		if code != tt.code || got != tt.ran || !strings.Contains(out.String(), tt.out) || tt.out == "" && out.Len() > 0 {
			t.Errorf("%q: exit %d, ran %q, stdout %q; want %d, %q, %q", tt.args, code, got, out.String(), tt.code, tt.ran, tt.out)
		}
		if !strings.Contains(errw.String(), tt.err) || tt.err == "" && errw.Len() > 0 {
			t.Errorf("%q: stderr %q, want %q", tt.args, errw.String(), tt.err)
		}
	}
}

// TestParseArgs: flags may follow positional arguments, "--" ends them,
// -h prints the help to stdout (exit 0), a bad flag the help to stderr
// (exit 2), and ParseFlags refuses positional arguments.
func TestParseArgs(t *testing.T) {
	newFS := func() (*flag.FlagSet, *bool) {
		fs := FlagSet("call", "TOOL [ARGS]", "call a tool")
		return fs, fs.Bool("json", false, "print JSON")
	}
	fs, asJSON := newFS()
	var out, errw bytes.Buffer
	pos, code, ok := ParseArgs(fs, []string{"echo", "{}", "--json", "--", "--not-a-flag"}, &out, &errw)
	if !ok || code != ExitOK || !*asJSON || !slices.Equal(pos, []string{"echo", "{}", "--not-a-flag"}) {
		t.Errorf("interspersed: %q, %d, %v, json %v", pos, code, ok, *asJSON)
	}

	fs, _ = newFS()
	out.Reset()
	if _, code, ok := ParseArgs(fs, []string{"-h"}, &out, &errw); ok || code != ExitOK || !strings.HasPrefix(out.String(), "usage: dsh-host call TOOL [ARGS]") || !strings.Contains(out.String(), "Exit codes: 0 success") {
		t.Errorf("-h: %d, %v, stdout %q", code, ok, out.String())
	}

	fs, _ = newFS()
	out.Reset()
	errw.Reset()
	if _, code, ok := ParseArgs(fs, []string{"--nope"}, &out, &errw); ok || code != ExitUsage || out.Len() > 0 || !strings.Contains(errw.String(), "flag provided but not defined: -nope") || !strings.Contains(errw.String(), "usage: dsh-host call") {
		t.Errorf("bad flag: %d, %v, stdout %q, stderr %q", code, ok, out.String(), errw.String())
	}

	fs, _ = newFS()
	errw.Reset()
	if code, ok := ParseFlags(fs, []string{"extra"}, &out, &errw); ok || code != ExitUsage || !strings.HasPrefix(errw.String(), `dsh-host call: unexpected arguments ["extra"]`) {
		t.Errorf("ParseFlags with an argument: %d, %v, stderr %q", code, ok, errw.String())
	}
}

// TestChoice: a flag of fixed values refuses another, naming them.
func TestChoice(t *testing.T) {
	v := "auto"
	c := Choice{Value: &v, Allowed: []string{"auto", "on", "off"}}
	if err := c.Set("on"); err != nil || v != "on" {
		t.Errorf("Set(on): %v, value %q", err, v)
	}
	if err := c.Set("loud"); err == nil || err.Error() != "want auto, on, off" || v != "on" {
		t.Errorf("Set(loud): %v, value %q; want refused, naming the choices, value kept", err, v)
	}
}
