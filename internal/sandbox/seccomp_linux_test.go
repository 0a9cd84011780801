package sandbox

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// netWorld is what the seccomp probes aim at: a loopback UDP socket that
// counts the datagrams it gets, a pathname unix stream socket (a Docker
// socket's stand-in) and datagram socket (journald's), and a loopback TCP
// listener on a port no test grants.
type netWorld struct {
	udp                  net.PacketConn
	unixPath, unixgram   string
	tcp                  string
	received             chan string
	unixAccepts, unixgms chan struct{}
}

func newNetWorld(t *testing.T) *netWorld {
	t.Helper()
	w := &netWorld{received: make(chan string, 16), unixAccepts: make(chan struct{}, 16), unixgms: make(chan struct{}, 16)}
	var err error
	if w.udp, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.udp.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := w.udp.ReadFrom(buf)
			if err != nil {
				return
			}
			w.received <- string(buf[:n])
		}
	}()
	// A short directory: a socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "sbx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w.unixPath, w.unixgram = filepath.Join(dir, "docker.sock"), filepath.Join(dir, "journal.sock")
	ul, err := net.Listen("unix", w.unixPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go accept(ul, w.unixAccepts)
	ug, err := net.ListenPacket("unixgram", w.unixgram)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ug.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := ug.ReadFrom(buf); err != nil {
				return
			}
			w.unixgms <- struct{}{}
		}
	}()
	tl, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	go accept(tl, nil)
	w.tcp = tl.Addr().String()
	for _, p := range []string{w.unixPath, w.unixgram} {
		os.Chmod(p, 0o777) // for a server running as nobody
	}
	return w
}

func accept(l net.Listener, seen chan struct{}) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
		if seen != nil {
			seen <- struct{}{}
		}
	}
}

// drained reports whether ch got something, and empties it.
func drained[T any](ch chan T) bool {
	got := false
	for {
		select {
		case <-ch:
			got = true
		default:
			return got
		}
	}
}

// TestSeccompRefusesUDPAndUnixSockets: inside the sandbox a server cannot
// send a UDP datagram (DNS exfiltration's way out), nor reach a pathname
// unix socket (a Docker socket, journald's), whether through socket() or
// a datagram socketpair aimed at a path; nor slip past the filter or
// Landlock with what they do not govern: MPTCP, raw and packet sockets, an
// int argument with high bits set, io_uring. A stream socketpair, which
// Node and Python start children over, works. Unsandboxed every probe
// succeeds and the datagrams arrive, so the refusals are the sandbox's.
func TestSeccompRefusesUDPAndUnixSockets(t *testing.T) {
	needSandbox(t)
	w := newNetWorld(t)
	root := os.Geteuid() == 0
	type probe struct{ act, target, refusal string }
	probes := []probe{
		{"udp", w.udp.LocalAddr().String(), "permission denied"},
		{"highbits", "", "permission denied"},
		{"unix", w.unixPath, "permission denied"},
		{"dgrampair", w.unixgram, "permission denied"},
		{"mptcp", w.tcp, "permission denied"},
		{"iouring", "", "function not implemented"},
		{"fastopen", w.tcp, "permission denied"},
	}
	if root { // only root may open them at all
		probes = append(probes, probe{"raw", "", "permission denied"}, probe{"packet", "", "permission denied"})
	}
	mptcp := mptcpEnabled()
	for _, p := range probes {
		if got := act(t, Config{Mode: ModeStrict}, p.act, p.target); !strings.Contains(got, p.refusal) {
			t.Errorf("sandboxed: %s %s = %q, want it refused (%s)", p.act, p.target, got, p.refusal)
		}
	}
	if drained(w.received) || drained(w.unixAccepts) || drained(w.unixgms) {
		t.Error("a refused probe's datagram or connection arrived")
	}
	if got := act(t, Config{Mode: ModeStrict}, "streampair", ""); got != "ok" {
		t.Errorf("sandboxed: a stream socketpair = %q, want ok", got)
	}
	for _, p := range probes {
		if p.act == "mptcp" && !mptcp {
			continue
		}
		if got := act(t, Config{Mode: ModeOff}, p.act, p.target); got != "ok" {
			t.Errorf("mode off: %s %s = %q, want ok (the probe itself must work)", p.act, p.target, got)
		}
	}
	if !drained(w.received) || !drained(w.unixAccepts) || !drained(w.unixgms) {
		t.Error("unsandboxed, a datagram or connection did not arrive: the probes prove nothing")
	}
}

// mptcpEnabled reports whether the kernel makes MPTCP sockets.
func mptcpEnabled() bool {
	b, err := os.ReadFile("/proc/sys/net/mptcp/enabled")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// TestSeccompKeysAllow: sandbox.udp and sandbox.unix allow what they
// name and nothing more; unset, udp follows connect (a server allowed to
// connect somewhere must resolve names), and udp: false refuses it even
// then.
func TestSeccompKeysAllow(t *testing.T) {
	needSandbox(t)
	w := newNetWorld(t)
	yes, no := true, false
	udp := w.udp.LocalAddr().String()
	port := func(addr string) uint16 {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return uint16(n)
	}
	for _, c := range []struct {
		name        string
		cfg         Config
		act, target string
		want        string
	}{
		{"udp: true", Config{Mode: ModeStrict, UDP: &yes}, "udp", udp, "ok"},
		{"udp: true, unix", Config{Mode: ModeStrict, UDP: &yes}, "unix", w.unixPath, "permission denied"},
		{"unix: true", Config{Mode: ModeStrict, Unix: true}, "unix", w.unixPath, "ok"},
		{"unix: true, dgram pair", Config{Mode: ModeStrict, Unix: true}, "dgrampair", w.unixgram, "ok"},
		{"unix: true, udp", Config{Mode: ModeStrict, Unix: true}, "udp", udp, "permission denied"},
		{"connect: [port]", Config{Mode: ModeStrict, Connect: Ports{List: []uint16{port(w.tcp)}}}, "udp", udp, "ok"},
		{"connect: any", Config{Mode: ModeStrict, Connect: Ports{Any: true}}, "udp", udp, "ok"},
		{"connect: [port], udp: false", Config{Mode: ModeStrict, Connect: Ports{List: []uint16{port(w.tcp)}}, UDP: &no}, "udp", udp, "permission denied"},
		{"connect: [port], tcp", Config{Mode: ModeStrict, Connect: Ports{List: []uint16{port(w.tcp)}}}, "tcp", w.tcp, "ok"},
	} {
		if got := act(t, c.cfg, c.act, c.target); !strings.Contains(got, c.want) {
			t.Errorf("%s: %s %s = %q, want %q", c.name, c.act, c.target, got, c.want)
		}
	}
	select {
	case <-w.received:
	case <-time.After(10 * time.Second): // a bound, not a timing: it arrived before the probe answered
		t.Error("the allowed datagram did not arrive")
	}
}

// TestSeccompReport: the launch report says what seccomp blocks, and
// that unset udp follows connect.
func TestSeccompReport(t *testing.T) {
	needSandbox(t)
	yes := true
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: ModeAuto}, "udp: blocked (seccomp), unix sockets: blocked (seccomp)"},
		{Config{Mode: ModeAuto, UDP: &yes, Unix: true}, "udp: allowed (sandbox.udp), unix sockets: allowed (sandbox.unix)"},
		{Config{Mode: ModeAuto, Connect: Ports{List: []uint16{443}}}, "udp: allowed (as sandbox.connect allows TCP"},
	} {
		l, err := Start(actCmd(os.Args[0], "none", ""), c.cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Cleanup()
		if !strings.Contains(l.Report, c.want) {
			t.Errorf("%+v: report = %q, want %q", c.cfg, l.Report, c.want)
		}
	}
}

// TestCheckProbesSeccomp: sandbox check's UDP and unix socket probes are
// refused under the defaults and let through by the keys that allow them.
func TestCheckProbesSeccomp(t *testing.T) {
	needSandbox(t)
	yes := true
	results := func(cfg Config) map[string]ProbeResult {
		cmd := exec.Command("/bin/true")
		cmd.Env, cmd.Dir = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}, "/"
		rep, err := Check(context.Background(), cmd, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]ProbeResult{}
		for _, r := range rep.Results {
			out[r.Name] = r
		}
		return out
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: ModeStrict}, "refused"},
		{Config{Mode: ModeStrict, UDP: &yes, Unix: true}, "allowed"},
	} {
		got := results(c.cfg)
		for _, name := range []string{"send-udp", "connect-unix"} {
			if r := got[name]; r.Got != c.want || !r.OK() {
				t.Errorf("udp %v, unix %v: %s = %+v, want %s", c.cfg.UDP != nil, c.cfg.Unix, name, r, c.want)
			}
		}
	}
}
