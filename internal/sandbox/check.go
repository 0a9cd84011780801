package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// probeTimeout bounds one probe process, launcher included.
const probeTimeout = 20 * time.Second

// Report is what Check found for one server: the launch its command
// gets, what the sandbox does not enforce, and each probe's outcome.
type Report struct {
	// Launch is the start the server gets: Report, Rules, ABI, Notes.
	Launch *Launch
	// NotEnforced names what a compromised server could still do.
	NotEnforced []string
	Results     []ProbeResult
}

// ProbeResult is one probe's outcome.
type ProbeResult struct {
	Name, What string
	// Target is what the probe aimed at (a path, an address).
	Target string
	// Want is "refused", or "allowed" when the rules grant the target.
	Want string
	// Got is "refused", "allowed", "skipped" or "failed".
	Got string
	// Detail is the probe's error, or why it was skipped or failed.
	Detail string
}

// OK reports whether the probe saw what the rules say. A probe that could
// not run (skipped) proved nothing, so it is not OK: the check fails
// closed.
func (r ProbeResult) OK() bool { return r.Got == r.Want }

// Failed reports whether any probe saw other than what the rules say.
func (r *Report) Failed() bool {
	for _, p := range r.Results {
		if !p.OK() {
			return true
		}
	}
	return false
}

// Check runs Probes inside the sandbox cmd (made as for Start, with Env
// and Dir set; it is not changed) would start in under cfg, and reports
// the rules and each probe's outcome. Unsandboxed (mode off, a system
// without Landlock), the probes run with the user's rights and show what
// the server could do.
func Check(ctx context.Context, cmd *exec.Cmd, cfg Config, roots []string) (*Report, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find the host's binary to run the probes: %w", err)
	}
	if !hooked.Load() {
		return nil, errors.New("sandbox: this binary does not call sandbox.Main first, so it cannot run probes")
	}
	dir, err := os.MkdirTemp("", "dsh-sandbox-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The server's command as its start runs it (npx offline, go run's
	// binary), for the rules it gets.
	cmd = clone(cmd)
	prep, err := Prepare(ctx, cmd, cfg)
	if err != nil {
		return nil, err
	}
	defer prep.Cleanup()
	launch, err := start(clone(cmd), cfg, roots, nil) // the rules, before the targets
	if err != nil {
		return nil, err
	}
	launch.Cleanup()
	rep := &Report{Launch: launch, NotEnforced: notEnforced(launch)}
	for _, p := range Probes() {
		res := ProbeResult{Name: p.Name, What: p.What, Want: "refused"}
		target, granted, err := p.Target(dir, launch.Rules)
		if !launch.Sandboxed {
			granted = true // nothing is refused
		}
		if granted {
			res.Want = "allowed"
		}
		res.Target = target
		if err != nil {
			res.Got, res.Detail = "skipped", err.Error()
			rep.Results = append(rep.Results, res)
			continue
		}
		res.Got, res.Detail, err = runProbeIn(ctx, cmd, cfg, roots, []string{self, probeMarker, p.Name, target})
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// runProbeIn runs the probe command run in cmd's sandbox and returns its
// outcome.
func runProbeIn(ctx context.Context, cmd *exec.Cmd, cfg Config, roots []string, run []string) (got, detail string, err error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c := clone(cmd)
	launch, err := start(c, cfg, roots, run)
	if err != nil {
		return "", "", err
	}
	defer launch.Cleanup()
	if !launch.Sandboxed {
		c.Path, c.Args = run[0], run
	}
	pc := exec.CommandContext(ctx, c.Path, c.Args[1:]...)
	pc.Env, pc.Dir = c.Env, c.Dir
	var out, errOut bytes.Buffer
	pc.Stdout, pc.Stderr = &out, &errOut
	runErr := pc.Run()
	detail = strings.TrimSpace(out.String())
	var ee *exec.ExitError
	switch {
	case runErr == nil:
		return "allowed", "", nil
	case errors.As(runErr, &ee) && ee.ExitCode() == probeRefused:
		return "refused", detail, nil
	case errors.As(runErr, &ee):
		// The launcher's own failure is on stderr.
		if s := strings.TrimSpace(errOut.String()); s != "" {
			detail = strings.TrimSpace(detail + " " + s)
		}
		return "failed", fmt.Sprintf("%s (%s)", detail, ee.ProcessState), nil
	}
	return "failed", runErr.Error(), nil
}

// clone copies what Start reads of cmd into a command of its own.
func clone(cmd *exec.Cmd) *exec.Cmd {
	c := exec.Command(cmd.Path, cmd.Args[1:]...)
	c.Path, c.Err = cmd.Path, cmd.Err
	c.Env = append([]string(nil), cmd.Env...)
	c.Dir = cmd.Dir
	return c
}

// notEnforced names what the sandbox of l leaves a server free to do.
func notEnforced(l *Launch) []string {
	if !l.Sandboxed {
		return []string{"everything: " + l.Report}
	}
	// What Landlock of this ABI, seccomp and the limits cannot enforce
	// here (Start's words).
	return l.NotEnforced
}

// Write prints r for a person: the launch, the rules, what is not
// enforced, and each probe's outcome.
func (r *Report) Write(w io.Writer) {
	l := r.Launch
	fmt.Fprintf(w, "  %s\n", l.Report)
	if l.Sandboxed {
		fmt.Fprintf(w, "  read:    %s\n", strings.Join(l.Rules.Read, ", "))
		fmt.Fprintf(w, "  write:   %s\n", strings.Join(l.Rules.Write, ", "))
		fmt.Fprintf(w, "  connect: %s; bind: %s\n", l.Rules.Connect, l.Rules.Bind)
	}
	for _, n := range l.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, n := range r.NotEnforced {
		fmt.Fprintf(w, "  not enforced: %s\n", n)
	}
	for _, p := range r.Results {
		verdict := "as the rules say"
		if !p.OK() {
			verdict = "NOT as the rules say: want " + p.Want
		}
		line := fmt.Sprintf("  probe %s (%s, %s): %s, %s", p.Name, p.What, p.Target, p.Got, verdict)
		if p.Detail != "" {
			line += ": " + p.Detail
		}
		fmt.Fprintln(w, line)
	}
}
