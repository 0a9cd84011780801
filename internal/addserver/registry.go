package addserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/internal/registry"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/mcpservers"
)

// Question is one value a server needs that add asks for: a required
// argument or environment variable without a default.
type Question struct {
	// Label names it: "environment variable FOO", "argument <directory>".
	Label       string
	Description string
	Default     string
	Choices     []string
}

// Asker answers questions; an error (no answer, end of input) stops add
// with nothing written.
type Asker interface {
	Ask(ctx context.Context, q Question) (string, error)
}

// From is where a registry server's entry comes from.
type From struct {
	// Prefer picks the kind of package when the document has several
	// runnable ones: "npm", "pypi" or "remote"; "" takes the first of
	// npm, PyPI, remote this machine can run.
	Prefer string
	// Name is the entry's id and serverName; "" derives it from the
	// registry name's last part.
	Name string
	// Have reports whether a command is on PATH (nil: exec.LookPath).
	Have func(command string) bool
	// Env reports a variable of the environment add runs in (nil:
	// os.LookupEnv), to say which secrets are set already.
	Env func(string) (string, bool)
}

// ParseRef splits "io.github.owner/server[@VERSION]".
func ParseRef(ref string) (name, version string, err error) {
	name, version, _ = strings.Cut(ref, "@")
	if !registry.ValidName(name) {
		return "", "", fmt.Errorf("%q is not a registry server name (namespace/name[@version], such as io.github.owner/server)", ref)
	}
	return name, version, nil
}

// IsRef reports whether arg names a registry server rather than a local
// name: registry names hold a slash, serverNames cannot.
func IsRef(arg string) bool { return strings.Contains(arg, "/") }

// FromRegistry resolves ref in the registry c and builds the entry of the
// package this machine can run, asking ask for what it needs.
func FromRegistry(ctx context.Context, c *registry.Client, ref string, from From, ask Asker) (*Plan, error) {
	name, version, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	s, err := c.Get(ctx, name, version)
	if errors.Is(err, registry.ErrNotFound) {
		if version != "" {
			return nil, fmt.Errorf("%s@%s is not in the registry %s (dsh-host search %s lists what is)", name, version, c.URL(), lastPart(name))
		}
		return nil, fmt.Errorf("%s is not in the registry %s (dsh-host search %s lists what is)", name, c.URL(), lastPart(name))
	}
	if err != nil {
		return nil, err
	}
	return planServer(ctx, s, c.URL(), from, ask)
}

func lastPart(name string) string { return name[strings.LastIndex(name, "/")+1:] }

// choice is one way to run a server: a package or a remote.
type choice struct {
	kind string // npm, pypi, remote
	pkg  *registry.Package
	rem  *registry.Remote
}

// Default registries of the package types: a package elsewhere would be
// fetched from these under its name, which may be another package.
var defaultBases = map[string][]string{
	registry.TypeNPM:  {"", "https://registry.npmjs.org", "https://registry.npmjs.org/"},
	registry.TypePyPI: {"", "https://pypi.org", "https://pypi.org/", "https://pypi.org/simple", "https://pypi.org/simple/"},
}

// choices lists the ways s can be run by add, in the order of preference,
// and says why the others are left out.
func choices(s *registry.Server) (out []choice, skipped []string) {
	for i := range s.Packages {
		p := &s.Packages[i]
		kind := p.RegistryType
		switch {
		case kind != registry.TypeNPM && kind != registry.TypePyPI:
			skipped = append(skipped, fmt.Sprintf("package %s (%s) is not run by dsh-host add: write its entry by hand", p.Identifier, kind))
		case p.Transport.Type != registry.TransportStdio:
			skipped = append(skipped, fmt.Sprintf("package %s serves %s itself: run it yourself and add its URL with --transport", p.Identifier, p.Transport.Type))
		case !slices.Contains(defaultBases[kind], p.RegistryBaseURL):
			skipped = append(skipped, fmt.Sprintf("package %s is from %s, not the default %s registry, which npx and uvx would fetch it from instead: left out", p.Identifier, p.RegistryBaseURL, kind))
		default:
			out = append(out, choice{kind: kind, pkg: p})
		}
	}
	for i := range s.Remotes {
		r := &s.Remotes[i]
		if strings.ContainsAny(r.URL, "{}") {
			skipped = append(skipped, fmt.Sprintf("remote %s has variables in its URL, which add does not fill: write its entry by hand", r.URL))
			continue
		}
		if plainHTTP(r.URL) {
			skipped = append(skipped, fmt.Sprintf("remote %s is plain http, which would carry its headers (a token) in clear: left out", r.URL))
			continue
		}
		out = append(out, choice{kind: "remote", rem: r})
	}
	rank := map[string]int{registry.TypeNPM: 0, registry.TypePyPI: 1, "remote": 2}
	slices.SortStableFunc(out, func(a, b choice) int { return rank[a.kind] - rank[b.kind] })
	return out, skipped
}

// plainHTTP reports whether u is an http URL beyond this machine (the
// registry's remotes are on the network; one on loopback is a local test).
func plainHTTP(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "http" {
		return err != nil
	}
	if p.Hostname() == "localhost" {
		return false
	}
	ip := net.ParseIP(p.Hostname())
	return ip == nil || !ip.IsLoopback()
}

// runner is the command that runs a package of kind.
func runner(kind string) string {
	if kind == registry.TypePyPI {
		return "uvx"
	}
	return "npx"
}

// pick chooses the way to run s.
func pick(s *registry.Server, from From) (choice, []string, error) {
	cs, notes := choices(s)
	if from.Prefer != "" {
		cs = slices.DeleteFunc(cs, func(c choice) bool { return c.kind != from.Prefer })
		if len(cs) == 0 {
			return choice{}, notes, fmt.Errorf("%s@%s has no %s package or remote add can use%s", s.Name, s.Version, from.Prefer, because(notes))
		}
	}
	if len(cs) == 0 {
		return choice{}, notes, fmt.Errorf("%s@%s has no npm or PyPI package nor remote add can use%s", s.Name, s.Version, because(notes))
	}
	have := from.Have
	for _, c := range cs {
		if c.kind == "remote" || have(runner(c.kind)) {
			return c, notes, nil
		}
	}
	// Nothing runs here: the first is written, with what to install.
	c := cs[0]
	notes = append(notes, fmt.Sprintf("%s is not on PATH here: install it (%s) where dsh-host runs", runner(c.kind), map[string]string{"npx": "Node.js", "uvx": "uv"}[runner(c.kind)]))
	return c, notes, nil
}

func because(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return ":\n  " + strings.Join(notes, "\n  ")
}

// literal is a value of the document made literal in the composition,
// where ${...} would expand a variable of the user's environment into
// what the server gets.
func literal(v string) string { return strings.ReplaceAll(v, "${", "$${") }

// PlanOfServer builds the entry that runs s, a document of the registry
// at base already read (FromRegistry reads it).
func PlanOfServer(ctx context.Context, s *registry.Server, base string, from From, ask Asker) (*Plan, error) {
	return planServer(ctx, s, base, from, ask)
}

// planServer builds the entry that runs s.
func planServer(ctx context.Context, s *registry.Server, base string, from From, ask Asker) (*Plan, error) {
	if from.Have == nil {
		from.Have = have
	}
	if from.Env == nil {
		from.Env = os.LookupEnv
	}
	name := from.Name
	if name == "" {
		name = mcpservers.ServerNameFor(lastPart(s.Name), nil)
	}
	c, notes, err := pick(s, from)
	if err != nil {
		return nil, err
	}
	p := &Plan{From: s.Name + "@" + s.Version, Registry: base, Notes: notes}
	b := &builder{plan: p, ask: ask, ctx: ctx, server: name, env: from.Env}
	fields := map[string]any{}
	if c.kind == "remote" {
		fields["type"] = c.rem.Type
		fields["url"] = literal(c.rem.URL)
		headers, err := b.headers(c.rem.Headers)
		if err != nil {
			return nil, err
		}
		if len(headers) > 0 {
			fields["headers"] = headers
		}
		p.Via = c.rem.Type + " " + c.rem.URL
	} else {
		pkg := c.pkg
		if len(pkg.RuntimeArguments) > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("the package's runtimeArguments (options of %s) are not written: a registry document does not choose the runner's options", runner(c.kind)))
		}
		spec := pkg.Identifier
		var args []string
		if c.kind == registry.TypeNPM {
			if pkg.Version != "" {
				spec += "@" + pkg.Version
			}
			args = []string{"-y", spec}
		} else {
			if pkg.Version != "" {
				spec += "==" + pkg.Version
			}
			args = []string{spec}
		}
		if pkg.Version == "" {
			p.Notes = append(p.Notes, fmt.Sprintf("the package names no version: %s runs its latest, which may change under the pins", runner(c.kind)))
		}
		rest, err := b.arguments(pkg.PackageArguments)
		if err != nil {
			return nil, err
		}
		fields["command"] = runner(c.kind)
		fields["args"] = anys(append(args, rest...))
		env, err := b.environment(pkg.EnvironmentVariables)
		if err != nil {
			return nil, err
		}
		if len(env) > 0 {
			fields["env"] = env
		}
		p.Via = c.kind + ": " + runner(c.kind) + " " + strings.Join(args, " ")
	}
	imp, err := convert(name, fields)
	if err != nil {
		return nil, err
	}
	if imp.Config.Transport == mcpclient.TransportStdio {
		b.grants(&imp.Config.Sandbox)
	}
	p.Server = imp
	return p, nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// builder fills a package's arguments, variables and headers.
type builder struct {
	ctx    context.Context
	plan   *Plan
	ask    Asker
	server string
	env    func(string) (string, bool)
	// paths are the answers of filepath arguments, made absolute.
	paths []string
	// secret is set when the server takes a secret (an API's key).
	secret bool
}

// secretVar is the variable a secret value is read from.
func (b *builder) secretVar(name string) string {
	v := strings.ToUpper(mcpservers.ServerNameFor(b.server, nil) + "_" + name)
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, v)
}

// export records a secret to set as var.
func (b *builder) export(v, description string) string {
	b.secret = true
	_, set := b.env(v)
	b.plan.Exports = append(b.plan.Exports, Export{Var: v, Hint: description, Set: set})
	return "${" + v + "}"
}

// value returns the value of in: a secret as a variable, a fixed value,
// else the answer to a question when required (or "" and false when it
// may be left out).
func (b *builder) value(in registry.Input, label, secretName string) (string, bool, error) {
	switch {
	case in.IsSecret:
		return b.export(b.secretVar(secretName), in.Description), true, nil
	case in.Value != "":
		return literal(in.Value), true, nil
	case !in.IsRequired:
		return "", false, nil
	case in.Default != "" && len(in.Choices) == 0:
		return literal(in.Default), true, nil
	}
	for range 3 {
		v, err := b.ask.Ask(b.ctx, Question{Label: label, Description: in.Description, Default: in.Default, Choices: in.Choices})
		if err != nil {
			return "", false, fmt.Errorf("%s is required: %w; nothing was written", label, err)
		}
		if v == "" {
			v = in.Default
		}
		if v != "" && (len(in.Choices) == 0 || slices.Contains(in.Choices, v)) {
			if err := checkAnswer(v); err != nil {
				return "", false, fmt.Errorf("%s: %w", label, err)
			}
			if in.Format == "filepath" {
				abs, err := filepath.Abs(v)
				if err == nil && !strings.HasPrefix(v, "~") && !strings.HasPrefix(v, "$") {
					v = abs
				}
				b.paths = append(b.paths, v)
			}
			return v, true, nil
		}
	}
	return "", false, fmt.Errorf("%s is required and was not given; nothing was written", label)
}

// checkAnswer refuses an answer a line of the composition cannot hold.
func checkAnswer(v string) error {
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errors.New("an answer holds a control character")
	}
	return nil
}

func (b *builder) arguments(args []registry.Argument) ([]string, error) {
	var out []string
	for i, a := range args {
		label := "argument " + a.Name
		if a.Type == registry.Positional {
			hint := a.ValueHint
			if hint == "" {
				hint = fmt.Sprint(i + 1)
			}
			label = "argument <" + hint + ">"
		}
		secretName := strings.TrimLeft(a.Name, "-")
		if secretName == "" {
			secretName = "ARG_" + a.ValueHint
		}
		v, ok, err := b.value(a.Input, label, secretName)
		if err != nil {
			return nil, err
		}
		switch {
		case a.Type == registry.Named && ok:
			out = append(out, a.Name, v)
		case a.Type == registry.Named && a.IsRequired:
			out = append(out, a.Name) // a flag without a value
		case ok:
			out = append(out, v)
		}
	}
	return out, nil
}

func (b *builder) environment(vars []registry.Input) (map[string]any, error) {
	env := map[string]any{}
	var steer []string
	for _, e := range vars {
		if runnerVariable(e.Name) {
			steer = append(steer, e.Name)
			continue
		}
		if e.IsSecret {
			// A variable keeps its own name: export it as the server
			// documents it.
			env[e.Name] = b.export(e.Name, e.Description)
			continue
		}
		v, ok, err := b.value(e, "environment variable "+e.Name, e.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			env[e.Name] = v
		}
	}
	if len(steer) > 0 {
		b.plan.Notes = append(b.plan.Notes, fmt.Sprintf("the package's variables %s are not written: they steer the runner (where it fetches the package from, what runs before it), which a registry document does not choose", strings.Join(steer, ", ")))
	}
	return env, nil
}

func (b *builder) headers(hs []registry.Input) (map[string]any, error) {
	out := map[string]any{}
	for _, h := range hs {
		v, ok, err := b.value(h, "header "+h.Name, h.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			out[h.Name] = v
		}
	}
	return out, nil
}

// grants adds what the document implies to a stdio server's sandbox,
// unless mcp-client's table of known servers granted it already: the
// paths given for its filepath arguments, and, when it takes a secret
// (an API's key), HTTPS.
func (b *builder) grants(sb *sandbox.Config) {
	if sb.Set() || sb.Mode != "" {
		return
	}
	if len(b.paths) > 0 {
		sb.Write = append(sb.Write, b.paths...)
		b.plan.Notes = append(b.plan.Notes, "sandbox: the paths given for its file arguments may be read and written (sandbox.write)")
	}
	if b.secret {
		sb.Connect = sandbox.Ports{List: []uint16{443}}
		b.plan.Notes = append(b.plan.Notes, "sandbox: it takes a secret, so it likely calls an HTTPS API: it may connect to port 443 (sandbox.connect); remove that if it does not")
	}
}
