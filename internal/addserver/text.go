package addserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/registry"
	"github.com/dsh-host/dsh-host/services/settings"
)

// SettingsSection is the settings key naming the registry add and search
// read: `registry: https://…` in $DSH_HOME/settings.yaml, or
// DSH_SETTINGS__REGISTRY in the environment.
const SettingsSection = "registry"

// RegistryURL returns the registry to read: the registry key of the
// user's settings file, under its environment override, else
// registry.Default. A project's settings (.dsh/settings.yaml beside a
// composition someone else wrote) are not read: they could send add to
// a registry of their choosing.
func RegistryURL(environ []string) (string, error) {
	file := dshhome.Default("settings.yaml")
	if file == "" {
		file = os.DevNull
	}
	st, err := settings.Open(file, slog.New(slog.DiscardHandler), settings.WithEnviron(environ))
	if err != nil {
		return "", err
	}
	url, ok, err := settings.Read[string](st, SettingsSection)
	if err != nil {
		return "", err
	}
	if !ok || url == "" {
		return registry.Default, nil
	}
	return url, nil
}

// Registry is the client of the registry RegistryURL names.
func Registry(environ []string) (*registry.Client, error) {
	url, err := RegistryURL(environ)
	if err != nil {
		return nil, err
	}
	return registry.New(url)
}

// Pairs is a repeatable KEY=VALUE flag (--env, --header).
type Pairs map[string]string

func (p Pairs) String() string { return "" }

func (p Pairs) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return errors.New("want KEY=VALUE")
	}
	p[k] = val
	return nil
}

// RemoveText is Remove, said for a person.
func RemoveText(ctx context.Context, file, name string) (string, error) {
	changed, running, err := Remove(ctx, file, name)
	if err != nil {
		return "", err
	}
	text := fmt.Sprintf("removed %s from %s\n", name, changed)
	if running {
		text += fmt.Sprintf("the running host of %s stops it now (it follows the file)\n", file)
	}
	return text, nil
}

// LineAsker asks on Out and reads one line of In per answer.
type LineAsker struct {
	In  *bufio.Reader
	Out io.Writer
}

// NewLineAsker asks on out, reading answers from in.
func NewLineAsker(in io.Reader, out io.Writer) *LineAsker {
	return &LineAsker{In: bufio.NewReader(in), Out: out}
}

// maxAnswer bounds an answer's line.
const maxAnswer = 64 << 10

func (a *LineAsker) Ask(ctx context.Context, q Question) (string, error) {
	fmt.Fprintf(a.Out, "%s", q.Label)
	if q.Description != "" {
		fmt.Fprintf(a.Out, " (%s)", q.Description)
	}
	if len(q.Choices) > 0 {
		fmt.Fprintf(a.Out, " [%s]", strings.Join(q.Choices, "|"))
	}
	if q.Default != "" {
		fmt.Fprintf(a.Out, " [default %s]", q.Default)
	}
	fmt.Fprint(a.Out, ": ")
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		var b strings.Builder
		for {
			chunk, err := a.In.ReadSlice('\n')
			b.Write(chunk)
			if b.Len() > maxAnswer {
				got <- answer{err: fmt.Errorf("an answer longer than %d bytes", maxAnswer)}
				return
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF && b.Len() > 0 {
				err = nil
			}
			got <- answer{strings.TrimRight(b.String(), "\r\n"), err}
			return
		}
	}()
	select {
	case r := <-got:
		if r.err == io.EOF {
			fmt.Fprintln(a.Out)
			return "", fmt.Errorf("no answer (end of input)")
		}
		return strings.TrimSpace(r.line), r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Text is what Write did, for a person.
func (r *Result) Text(p *Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "added %s to %s (%s", r.Name, r.File, p.Via)
	if p.From != "" {
		fmt.Fprintf(&b, ", from %s", p.From)
	}
	b.WriteString(")\n")
	for _, n := range append(slices.Clone(p.Notes), p.Server.Notes...) {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if len(p.Exports) > 0 {
		b.WriteString("the composition refers to these variables for its secrets; set them where dsh-host runs:\n")
		for _, e := range p.Exports {
			switch {
			case e.Value != "":
				fmt.Fprintf(&b, "  export %s=%s\n", e.Var, shellQuote(e.Value))
			case e.Set:
				fmt.Fprintf(&b, "  export %s=…   # set in this shell already", e.Var)
				if e.Hint != "" {
					fmt.Fprintf(&b, "; %s", e.Hint)
				}
				b.WriteByte('\n')
			default:
				fmt.Fprintf(&b, "  export %s=…", e.Var)
				if e.Hint != "" {
					fmt.Fprintf(&b, "   # %s", e.Hint)
				}
				b.WriteByte('\n')
			}
		}
	}
	var unset []string
	for _, e := range p.Exports {
		if !e.Set {
			unset = append(unset, e.Var)
		}
	}
	if len(unset) > 0 {
		fmt.Fprintf(&b, "until %s is set in the environment dsh-host runs in, a host refuses this file (a running one keeps what runs and applies no edit of it): export it, then start or restart the host\n", strings.Join(unset, ", "))
	}
	if r.Held != "" {
		fmt.Fprintf(&b, "its tools are held until you review them: no client or model is offered one before you run: dsh-host trust %s\n", r.Name)
	} else {
		b.WriteString("trusted on first use (--trust): its first list of tools is offered as it is\n")
	}
	if r.Running {
		fmt.Fprintf(&b, "the running host of %s starts it now (it follows the file); dsh-host status -c %s shows it\n", r.File, r.File)
	} else {
		fmt.Fprintf(&b, "no host runs %s now: dsh-host run -c %s (or serve) starts it\n", r.File, r.File)
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// SearchFor searches the registry environ names for query, at most
// limit servers, and says what it found (SearchText).
func SearchFor(ctx context.Context, environ []string, query string, limit int) (string, error) {
	if limit < 1 {
		return "", fmt.Errorf("--limit %d: list at least 1 server", limit)
	}
	reg, err := Registry(environ)
	if err != nil {
		return "", err
	}
	r, err := reg.Search(ctx, query, limit)
	if err != nil {
		return "", err
	}
	return SearchText(r, query), nil
}

// SearchText is a search's result for a person: one line per server
// (name, version, how it runs), its description under it.
func SearchText(r *registry.Result, query string) string {
	var b strings.Builder
	if len(r.Servers) == 0 {
		fmt.Fprintf(&b, "no server matches %q\n", query)
	}
	for _, s := range r.Servers {
		fmt.Fprintf(&b, "%s@%s  %s\n", s.Name, s.Version, transports(&s))
		if d := []rune(strings.Join(strings.Fields(s.Description), " ")); len(d) > 0 {
			if len(d) > 160 {
				d = append(d[:157], []rune("...")...)
			}
			fmt.Fprintf(&b, "    %s\n", string(d))
		}
	}
	if r.More {
		b.WriteString("(more match: narrow the query)\n")
	}
	for _, why := range r.Refused {
		fmt.Fprintf(&b, "refused: %s\n", why)
	}
	if len(r.Servers) > 0 {
		b.WriteString("add one with: dsh-host add NAME[@VERSION]\n")
	}
	return b.String()
}

// transports says how s can be run: "npm stdio, remote streamable-http".
func transports(s *registry.Server) string {
	var parts []string
	for _, p := range s.Packages {
		parts = append(parts, p.RegistryType+" "+p.Transport.Type)
	}
	for _, r := range s.Remotes {
		parts = append(parts, "remote "+r.Type)
	}
	if len(parts) == 0 {
		return "(no package or remote)"
	}
	return strings.Join(parts, ", ")
}
