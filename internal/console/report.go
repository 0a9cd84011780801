package console

// What the one-shot subcommands print beyond the console's own tables:
// the plugins, the instances that are not active, resources, a reload's
// outcome and the audit trail.

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/cli"
	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// WritePlugins prints the plugins built into the binary (host.Plugins):
// name, description, the services each injects and provides, and every
// config key with its type and default.
func WritePlugins(w io.Writer, ps []host.PluginInfo) {
	for i, p := range ps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s", p.Name)
		if p.Builtin {
			fmt.Fprint(w, " (built in)")
		}
		fmt.Fprintf(w, "\n  %s\n", p.Description)
		if len(p.Inject) > 0 {
			var deps []string
			for _, d := range p.Inject {
				s := d.Service
				if d.Optional {
					s += " (optional)"
				}
				deps = append(deps, s)
			}
			fmt.Fprintf(w, "  injects:  %s\n", strings.Join(deps, ", "))
		}
		if len(p.Provides) > 0 {
			fmt.Fprintf(w, "  provides: %s\n", strings.Join(p.Provides, ", "))
		}
		if len(p.Fields) == 0 {
			fmt.Fprintln(w, "  config:   none")
			continue
		}
		fmt.Fprintln(w, "  config:")
		var table bytes.Buffer
		tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
		for _, f := range p.Fields {
			def := ""
			if f.Default != "" {
				def = "default " + f.Default
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", f.Key, f.Type, def)
		}
		tw.Flush()
		// A key without a default would end in the padding of its type.
		for line := range strings.Lines(table.String()) {
			fmt.Fprintln(w, strings.TrimRight(line, " \n"))
		}
	}
}

// WriteInstanceLines prints one line per instance of the composition (and
// per built-in service that is not active): its state and detail or error,
// so that a server that failed is listed, not hidden.
func WriteInstanceLines(w io.Writer, st []host.InstanceStatus) {
	builtin := map[string]bool{}
	for _, p := range host.Plugins() {
		builtin[p.Name] = p.Builtin
	}
	header := false
	for _, s := range st {
		if builtin[s.Plugin] && s.ID == s.Plugin && s.State == host.StateActive {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\ninstances:")
			header = true
		}
		msg := s.Err
		if msg == "" {
			msg = s.Detail
		}
		state := string(s.State)
		if s.Kept != "" {
			state += " (" + s.Kept + ")"
		}
		fmt.Fprintf(w, "  %s (%s) %s: %s\n", s.ID, s.Plugin, state, Dash(msg))
	}
}

// WriteResources prints the resources and templates of the MCP servers
// as tables.
func WriteResources(w io.Writer, list []resources.Resource, tmpls []resources.Template) {
	if len(list) == 0 && len(tmpls) == 0 {
		fmt.Fprintln(w, "no resources or templates")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(list) > 0 {
		fmt.Fprintln(tw, "URI\tSERVER\tMIME TYPE\tNAME\tDESCRIPTION")
		for _, r := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.URI, r.Server, Dash(r.MIMEType), Dash(r.Name), Dash(OneLine(r.Description, 60)))
		}
	}
	if len(tmpls) > 0 {
		if len(list) > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintln(tw, "TEMPLATE\tSERVER\tMIME TYPE\tNAME\tDESCRIPTION")
		for _, t := range tmpls {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.URITemplate, t.Server, Dash(t.MIMEType), Dash(t.Name), Dash(OneLine(t.Description, 60)))
		}
	}
	tw.Flush()
}

// WriteOutcomes prints what the reload did to each entry it touched, and
// reports whether any was kept on its previous config or failed.
func WriteOutcomes(w io.Writer, outcomes []host.Outcome) (bad bool) {
	if len(outcomes) == 0 {
		return false
	}
	fmt.Fprintln(w, "\nchanged:")
	for _, o := range outcomes {
		fmt.Fprintf(w, "  %s: %s (%s)\n", o.ID, o.Result, Dash(o.Why))
		if o.Result == "kept" || o.Result == "failed" {
			bad = true
		}
	}
	return bad
}

// WriteAuditLine prints one record for a person.
func WriteAuditLine(w io.Writer, r audit.Record) {
	caller := r.Caller.Kind
	if r.Caller.ID != "" {
		caller += "/" + r.Caller.ID
	}
	if r.Caller.Subject != "" {
		caller += "(" + r.Caller.Subject + ")"
	}
	if r.Caller.Auth == tools.AuthStaticToken {
		caller += "[static token]"
	}
	decision := Dash(r.Decision)
	if r.Rule != "" {
		decision += " by " + r.Rule
	}
	outcome := r.Outcome
	if r.Error != "" {
		outcome += ": " + OneLine(r.Error, 100)
	}
	fmt.Fprintf(w, "%s  %s  %s  %s  %s  %.1fms  %dB\n", r.Time.Local().Format(time.DateTime), caller, r.Tool, decision, outcome, r.DurationMs, r.ResultSize)
}

// VerifyTrail prints what audit.Verify found of the trail in dir.
func VerifyTrail(std Stdio, dir string) int {
	check, err := audit.Verify(dir)
	if err != nil {
		fmt.Fprintf(std.Display().Err, "dsh-host audit: the trail in %s does not verify: %v\n", dir, err)
		return cli.ExitFail
	}
	out := std.Display().Out
	if check.Files == 0 {
		fmt.Fprintf(out, "no trail in %s yet\n", dir)
		return cli.ExitOK
	}
	fmt.Fprintf(out, "the trail verifies: %d lines in %d files, each following the one before it, up to the latest line its state file records\n", check.Lines, check.Files)
	// Kept elsewhere, it checks the state file itself later.
	fmt.Fprintf(out, "latest line's hash: %s\n", check.Latest)
	if check.Unchained > 0 {
		fmt.Fprintf(out, "its first %d lines were written before the chain: nothing before them vouches for them\n", check.Unchained)
	}
	return cli.ExitOK
}

// Plugins prints the plugins this binary registered (host.Plugins): as
// WritePlugins' table, or with asJSON as JSON.
func Plugins(w io.Writer, asJSON bool) error {
	if asJSON {
		return WriteJSON(w, host.Plugins())
	}
	WritePlugins(w, host.Plugins())
	return nil
}
