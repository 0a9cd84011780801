package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// attachHome returns a DSH_HOME for the host and the command-line
// processes of one test to share, short enough for a socket path under it
// (t.TempDir's can be too long).
func attachHome(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dsha")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// cliIn runs the binary to completion with DSH_HOME set to home.
func cliIn(t *testing.T, home string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "DSH_HOME="+home)
	return runToEnd(t, cmd)
}

// startHostIn starts `dsh-host run -c file` with DSH_HOME set to home and
// returns it once it runs (and so answers on its control socket), with its
// log records. It is stopped with SIGINT when the test ends.
func startHostIn(t *testing.T, home, file string) (*exec.Cmd, *hostLogs) {
	t.Helper()
	cmd := exec.Command(binary, "run", "--log-format", "json", "--log-level", "debug", "--console", "off", "-c", file)
	cmd.Env = append(os.Environ(), "DSH_HOME="+home)
	ch := startLogging(t, cmd)
	// Runs before startLogging's cleanup: a host that stops cleanly is
	// waited for, not killed.
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Errorf("dsh-host run (pid %d) did not stop within a minute of SIGINT; killed", cmd.Process.Pid)
			cmd.Process.Kill()
			<-done
		}
	})
	logs := &hostLogs{}
	running := msg("running; SIGHUP reloads, SIGINT or SIGTERM stops")
	waitLog(t, ch, "running", func(m map[string]any) bool {
		logs.add(m)
		return running(m)
	})
	go func() {
		for m := range ch { // until the process ends, so that it never blocks on stderr
			logs.add(m)
		}
	}()
	return cmd, logs
}

// hostLogs are the log records of a host process so far.
type hostLogs struct {
	mu      sync.Mutex
	records []map[string]any
}

func (l *hostLogs) add(m map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, m)
}

// has reports whether a record so far matches.
func (l *hostLogs) has(match func(map[string]any) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.records, match)
}

// withoutLogs drops log lines (text format) from stderr: a host of its
// own logs what it starts, an attached command does not.
func withoutLogs(stderr string) string {
	var b strings.Builder
	for line := range strings.Lines(stderr) {
		if !strings.HasPrefix(line, "time=") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func attachedTo(cmd *exec.Cmd) string {
	return fmt.Sprintf("dsh-host: attached to the running host (pid %d) for ", cmd.Process.Pid)
}

// TestAttach runs `dsh-host run` and the one-shot subcommands against it:
// they reach that host's servers (the fixture counts calls), print what
// they print standalone, and --no-attach starts a host of their own.
func TestAttach(t *testing.T) {
	home := attachHome(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("dsh-attach-%d-%d", os.Getpid(), time.Now().UnixNano())
	// The fixture's files, in the directory its sandbox grants.
	events := t.TempDir()
	crashFlag := filepath.Join(events, "crash")
	cancelFile := filepath.Join(events, "cancel")
	if err := os.WriteFile(crashFlag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fixture := mcptest.FixtureBinary(t)
	file := filepath.Join(dir, "composition.yml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %[1]q
      args: [-counter, -elicit, -progress, -cancel-file, %[3]q, -name, %[2]q]
      sandbox: {write: [%[5]q]}
  - id: broken
    name: mcp-client
    config:
      serverName: broken
      transport: stdio
      command: %[1]q
      args: [-crash-if-exists, %[4]q, -name, %[2]q]
      sandbox: {read: [%[5]q]}
      failOnStartupError: true
      reconnect: {enabled: false}
`, fixture, marker, cancelFile, crashFlag, events)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Registered first, so that it runs after the host has stopped.
	t.Cleanup(func() {
		if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
			t.Errorf("server processes left behind: %v", pids)
		}
	})
	run, _ := startHostIn(t, home, file)
	attached := attachedTo(run)

	call := func(args ...string) (int, string, string) {
		return cliIn(t, home, append([]string{"call", "-c", file}, args...)...)
	}
	t.Run("calls reach the running host's server", func(t *testing.T) {
		for _, want := range []string{"1", "2"} {
			code, out, errs := call("mcp__demo__count")
			if code != exitOK || out != want+"\n" || !strings.Contains(errs, attached+file) {
				t.Errorf("exit %d, stdout %q (want %q), stderr %q", code, out, want, errs)
			}
		}
		// A host of its own starts its own server, whose count starts at 1.
		code, out, errs := call("--no-attach", "mcp__demo__count")
		if code != exitOK || out != "1\n" || strings.Contains(errs, "attached") {
			t.Errorf("--no-attach: exit %d, stdout %q (want 1), stderr %q", code, out, errs)
		}
		if _, out, _ := call("mcp__demo__count"); out != "3\n" {
			t.Errorf("after --no-attach the running host counts %q, want 3", out)
		}
	})

	t.Run("output as standalone", func(t *testing.T) {
		for _, args := range [][]string{
			{"prompt", "--json"},
			{"prompt"},
			{"call", "mcp__demo__add", `{"a":2,"b":3}`, "--json"},
			{"call", "mcp__demo__nope"},
			{"call", "mcp__demo__fail", "--json"},
			{"command", "/mcp list demo"},
		} {
			args = append([]string{args[0], "-c", file}, args[1:]...)
			code, out, errs := cliIn(t, home, args...)
			sCode, sOut, sErrs := cliIn(t, home, append(args, "--no-attach")...)
			if !strings.Contains(errs, attached) {
				t.Errorf("%q did not attach: %s", args, errs)
			}
			errs, sErrs = withoutLogs(strings.TrimPrefix(errs, attached+file+"\n")), withoutLogs(sErrs)
			if code != sCode || out != sOut || errs != sErrs {
				t.Errorf("%q attached: exit %d\n%s\nstderr %q\nstandalone: exit %d\n%s\nstderr %q", args, code, out, errs, sCode, sOut, sErrs)
			}
		}
		// tools lists the same tools; the instances' details (pids,
		// uptimes) are each host's own.
		_, out, _ := cliIn(t, home, "tools", "-c", file)
		_, sOut, _ := cliIn(t, home, "tools", "-c", file, "--no-attach")
		table := func(s string) string { before, _, _ := strings.Cut(s, "\ninstances:"); return before }
		if table(out) != table(sOut) || !strings.Contains(out, "mcp__demo__count") {
			t.Errorf("tools attached:\n%s\nstandalone:\n%s", out, sOut)
		}
	})

	t.Run("elicitation answered as the flag says", func(t *testing.T) {
		code, out, errs := call("mcp__demo__ask", `{"nameDefault":"Ada"}`, "--elicit", "defaults")
		if code != exitOK || !strings.Contains(out, `{"action":"accept","content":{"color":"b","count":3,"name":"Ada"}}`) {
			t.Errorf("--elicit defaults: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		code, out, _ = call("mcp__demo__ask", `{"nameDefault":"Ada"}`)
		if code != exitOK || !strings.Contains(out, `"action":"decline"`) || !strings.Contains(out, "--elicit defaults") {
			t.Errorf("declined by default: exit %d, stdout %q", code, out)
		}
	})

	t.Run("progress reaches the terminal", func(t *testing.T) {
		t.Setenv("DSH_HOME", home)
		var stdout, stderr bytes.Buffer
		io := Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr, Terminal: func(v any) bool { return v == &stderr }}
		code := dispatch(context.Background(), []string{"call", "-c", file, "mcp__demo__progress", `{"steps":2,"ms":20}`}, io)
		if code != exitOK || !strings.Contains(stdout.String(), "done after 2 steps") ||
			!strings.Contains(stderr.String(), "\r\x1b[Kmcp__demo__progress: 1/2 (50%) step 1 of 2") || !strings.Contains(stderr.String(), "attached") {
			t.Errorf("exit %d\nstdout %q\nstderr %q", code, stdout.String(), stderr.String())
		}
	})

	t.Run("status shows the states", func(t *testing.T) {
		for _, noAttach := range []bool{false, true} {
			args := []string{"status", "-c", file}
			if noAttach {
				args = append(args, "--no-attach")
			}
			code, out, errs := cliIn(t, home, args...)
			if code != exitOK || strings.Contains(errs, "attached") == noAttach {
				t.Errorf("%q: exit %d, stderr %q", args, code, errs)
			}
			for _, want := range []string{"ID  ", "STATE", "demo  ", "mcp-client", "active", "broken", "failed", "tools  "} {
				if !strings.Contains(out, want) {
					t.Errorf("%q lacks %q:\n%s", args, want, out)
				}
			}
		}
		_, out, _ := cliIn(t, home, "status", "-c", file, "--json")
		if !strings.Contains(out, fmt.Sprintf(`"pid": %d`, run.Process.Pid)) || !strings.Contains(out, `"state": "failed"`) {
			t.Errorf("status --json:\n%s", out)
		}
	})

	t.Run("reload", func(t *testing.T) {
		// The file does not change, so only the reload the command asks
		// for starts broken again, now that it can start.
		if err := os.Remove(crashFlag); err != nil {
			t.Fatal(err)
		}
		code, out, errs := cliIn(t, home, "reload", "-c", file)
		if code != exitOK || !strings.Contains(out, "reloaded; ") || strings.Contains(out, "failed") {
			t.Errorf("reload: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		if _, out, _ := cliIn(t, home, "status", "-c", file); strings.Contains(out, "failed") {
			t.Errorf("broken was not restarted by the reload:\n%s", out)
		}
		// An edit the host cannot apply is reported, and changes nothing.
		good, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte("plugins:\n  - id: [\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs = cliIn(t, home, "reload", "-c", file)
		if code != exitFail || !strings.Contains(errs, "not applied; the running instances are unchanged") || !strings.Contains(errs, "composition.yml:") {
			t.Errorf("reload of a broken file: exit %d, stderr:\n%s", code, errs)
		}
		if _, out, _ := call("mcp__demo__count"); out != "4\n" {
			t.Errorf("after the rejected reload the count is %q, want 4 (the same server)", out)
		}
		if err := os.WriteFile(file, good, 0o644); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Ctrl-C cancels the call on the server", func(t *testing.T) {
		cli := exec.Command(binary, "call", "-c", file, "mcp__demo__slow", `{"ms":60000}`)
		cli.Env = append(os.Environ(), "DSH_HOME="+home)
		var errb bytes.Buffer
		cli.Stderr = &errb
		if err := cli.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if cli.ProcessState == nil {
				cli.Process.Kill()
				cli.Wait()
			}
		}()
		events := func() string { b, _ := os.ReadFile(cancelFile); return string(b) }
		mcptest.WaitFor(t, time.Minute, "the slow call to start", func() bool { return strings.Contains(events(), "slow started") })
		if err := cli.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		mcptest.WaitFor(t, time.Minute, "the server to see the cancellation", func() bool { return strings.Contains(events(), "slow cancelled") })
		cli.Wait()
		if !strings.Contains(errb.String(), "attached") || strings.Contains(events(), "slow done") {
			t.Errorf("stderr %q, events %q", errb.String(), events())
		}
	})
}

// TestAttachSockets: two compositions in two directories get two sockets,
// private to the user; a stale socket is replaced; a second host of the
// same composition runs without the socket, and the command line attaches
// to the first.
func TestAttachSockets(t *testing.T) {
	home := attachHome(t)
	compose := func(greeting string) string {
		return writeComposition(t, "plugins:\n  - {id: hi, name: greeter, config: {greeting: "+greeting+"}}\n")
	}
	hej, hallo := compose("Hej"), compose("Hallo")

	// A socket left by a host that died: no host answers, so the
	// command line starts its own, and run takes the socket over.
	t.Setenv("DSH_HOME", home)
	stalePath, err := control.SocketPath(hej)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(stalePath), 0o700); err != nil {
		t.Fatal(err)
	}
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: stalePath, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if code, out, errs := cliIn(t, home, "call", "-c", hej, "greet", `{"name":"Ada"}`); code != exitOK || out != "Hej, Ada!\n" || errs != "" {
		t.Errorf("call beside a stale socket: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	hejHost, _ := startHostIn(t, home, hej)
	halloHost, _ := startHostIn(t, home, hallo)
	for _, tt := range []struct {
		file, want string
		host       *exec.Cmd
	}{{hej, "Hej, Ada!\n", hejHost}, {hallo, "Hallo, Ada!\n", halloHost}} {
		code, out, errs := cliIn(t, home, "call", "-c", tt.file, "greet", `{"name":"Ada"}`)
		if code != exitOK || out != tt.want || !strings.Contains(errs, attachedTo(tt.host)) {
			t.Errorf("call -c %s: exit %d, stdout %q, stderr %q; want %q from pid %d", tt.file, code, out, errs, tt.want, tt.host.Process.Pid)
		}
	}
	socks, _ := filepath.Glob(filepath.Join(home, "run", "*.sock"))
	if len(socks) != 2 {
		t.Errorf("sockets %v, want two", socks)
	}
	for _, s := range socks {
		if fi, err := os.Stat(s); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
			t.Errorf("%s: %v, %v; want a socket of mode 0600", s, fi.Mode(), err)
		}
	}
	if di, err := os.Stat(filepath.Join(home, "run")); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("the sockets' directory: %v, %v; want 0700", di.Mode(), err)
	}

	// A second host of hej runs (as a second `serve --stdio` of one
	// composition must), without the socket: the first keeps it.
	second, logs := startHostIn(t, home, hej)
	if !logs.has(func(m map[string]any) bool {
		return strings.HasPrefix(fmt.Sprint(m["msg"]), "another host of this composition answers") && m["pid"] == fmt.Sprint(hejHost.Process.Pid)
	}) {
		t.Errorf("the second host of %s did not say it left the socket to the first (pid %d): %v", hej, hejHost.Process.Pid, logs.records)
	}
	if _, _, errs := cliIn(t, home, "status", "-c", hej); !strings.Contains(errs, attachedTo(hejHost)) {
		t.Errorf("status after a second host started: %q, want it attached to the first (pid %d)", errs, hejHost.Process.Pid)
	}
	// Once the first stops, the second takes the socket over.
	if err := hejHost.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	hejHost.Wait()
	mcptest.WaitFor(t, time.Minute, "the second host to take the socket over", func() bool {
		return logs.has(msg("the control socket's host stopped: this one answers on it now"))
	})
	if _, _, errs := cliIn(t, home, "status", "-c", hej); !strings.Contains(errs, attachedTo(second)) {
		t.Errorf("status after the first host stopped: %q, want it attached to the second (pid %d)", errs, second.Process.Pid)
	}

	// reload with nothing running says so.
	none := compose("Hi")
	if code, _, errs := cliIn(t, home, "reload", "-c", none); code != exitFail || !strings.Contains(errs, "nothing to reload") {
		t.Errorf("reload without a host: exit %d, stderr %q", code, errs)
	}
}

// TestAttachServe: serve answers on the control socket as run does, and
// an attached call reaches its tools; once serve has stopped, the command
// line starts its own host again.
func TestAttachServe(t *testing.T) {
	home := attachHome(t)
	t.Setenv("DSH_HOME", home)
	file := writeComposition(t, greeterComposition)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The stdio session starts before the control socket listens (once
	// the whole composition has started).
	s := serveInProcess(t, ctx, "--stdio", "--log-level", "debug", "-c", file)
	waitLog(t, s.logs, "the control socket", msg("control socket listening"))
	code, out, errs := cliIn(t, home, "call", "-c", file, "greet", `{"name":"Ada"}`)
	if want := fmt.Sprintf("dsh-host: attached to the running host (pid %d) for ", os.Getpid()); code != exitOK || out != "Hej, Ada!\n" || !strings.Contains(errs, want) {
		t.Errorf("call: exit %d, stdout %q, stderr %q; want it attached to serve (pid %d)", code, out, errs, os.Getpid())
	}
	cancel()
	if code := s.exit(t); code != exitOK {
		t.Errorf("serve: exit %d\n%s", code, s.stderr)
	}
	if socks, _ := filepath.Glob(filepath.Join(home, "run", "*.sock")); len(socks) != 0 {
		t.Errorf("sockets left after serve stopped: %v", socks)
	}
	if _, _, errs := cliIn(t, home, "call", "-c", file, "greet", `{"name":"Ada"}`); strings.Contains(errs, "attached") {
		t.Errorf("attached after serve stopped: %q", errs)
	}
}

// TestAttachResources: resources and read ask the running host, like
// call: they see a resource its server added at runtime (which a host of
// their own does not have), and print what they print standalone.
func TestAttachResources(t *testing.T) {
	home := attachHome(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("dsh-attach-res-%d-%d", os.Getpid(), time.Now().UnixNano())
	file := filepath.Join(dir, "composition.yml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-name, %q, -resources, "3"]
`, mcptest.FixtureBinary(t), marker)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
			t.Errorf("server processes left behind: %v", pids)
		}
	})
	run, _ := startHostIn(t, home, file)
	attached := attachedTo(run) + file + "\n"

	if code, out, errs := cliIn(t, home, "call", "-c", file, "mcp__fx__add-resource", `{"name":"live"}`); code != exitOK {
		t.Fatalf("add-resource: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	var out, errs string
	mcptest.WaitFor(t, time.Minute, "the running host to list the added resource", func() bool {
		_, out, errs = cliIn(t, home, "resources", "-c", file, "live")
		return strings.Contains(out, "fixture://added/live")
	})
	if !strings.Contains(errs, attached) {
		t.Errorf("resources did not attach: %q", errs)
	}
	code, out, errs := cliIn(t, home, "read", "-c", file, "fixture://added/live")
	if code != exitOK || out != "Resource fixture://added/live (text/plain):\nthe text of fixture://added/live\n" || !strings.Contains(errs, attached) {
		t.Errorf("read of the added resource: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, out, _ := cliIn(t, home, "resources", "-c", file, "live", "--no-attach"); strings.Contains(out, "fixture://added/live") {
		t.Errorf("a host of its own lists the resource added on the running one:\n%s", out)
	}

	for _, args := range [][]string{
		{"resources", "doc"},
		{"resources", "--server", "nope"},
		{"read", "fixture://doc/002"},
		{"read", "fixture://doc/{n}", "n=17"},
		{"read", "fixture://doc/001", "--json"},
		{"read", "fixture://image.png", "--json"},
		{"read", "fixture://data.bin"},
		{"read", "fixture://doc/x"},
	} {
		args = append([]string{args[0], "-c", file}, args[1:]...)
		code, out, errs := cliIn(t, home, args...)
		sCode, sOut, sErrs := cliIn(t, home, append(args, "--no-attach")...)
		if !strings.Contains(errs, attached) {
			t.Errorf("%q did not attach: %s", args, errs)
		}
		errs, sErrs = withoutLogs(strings.TrimPrefix(errs, attached)), withoutLogs(sErrs)
		// The instances' details (pids, uptimes) are each host's own.
		table := func(s string) string { before, _, _ := strings.Cut(s, "\ninstances:"); return before }
		if code != sCode || table(out) != table(sOut) || errs != sErrs {
			t.Errorf("%q attached: exit %d\n%s\nstderr %q\nstandalone: exit %d\n%s\nstderr %q", args, code, out, errs, sCode, sOut, sErrs)
		}
	}
}
