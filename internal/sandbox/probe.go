package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// probeMarker is the argument that makes Main run one probe rather than a
// server: `BINARY probeMarker NAME TARGET`. Check launches it through the
// server's own sandbox (the launcher execs the binary again, which then
// sees this marker), so a probe meets exactly the rules the server would.
const probeMarker = "__dsh-host-sandbox-probe__"

// Exit codes of a probe process: what it tried was done, refused with a
// permission error (the sandbox's answer), or failed otherwise (the probe
// cannot tell, which Check reports as such rather than as a refusal).
const (
	probeAllowed = 0
	probeRefused = 3
	probeFailed  = 4
)

// probeDialTimeout bounds a probe's connect: Landlock refuses at once, so
// only a target that does not answer takes long.
const probeDialTimeout = 5 * time.Second

// Probe is one thing Check tries inside a server's sandbox to prove a rule.
type Probe struct {
	// Name keys the probe on the probe process's command line.
	Name string
	// What words the attempt for the report ("read a file outside the
	// grants").
	What string
	// Target prepares, in the host, what the probe aims at, in dir (a
	// directory of Check's own, outside every default grant): it returns
	// the probe's argument, and whether the server's rules let the
	// attempt through (so that "allowed" is then expected, not a leak).
	// An error skips the probe, saying why.
	Target func(dir string, r Rules) (target string, granted bool, err error)
	// Try runs inside the sandbox: nil when the attempt succeeded.
	Try func(target string) error
}

// Probes returns the probes Check runs, in order. Each aims at something a
// compromised server would want and the defaults do not grant.
func Probes() []Probe {
	return []Probe{
		{
			Name: "read",
			What: "read a file outside the grants",
			Target: func(dir string, r Rules) (string, bool, error) {
				p := filepath.Join(dir, "secret")
				err := os.WriteFile(p, []byte("not for the server"), 0o600)
				return p, r.Readable(p), err
			},
			Try: func(p string) error { _, err := os.ReadFile(p); return err },
		},
		{
			Name: "write",
			What: "create a file outside the grants",
			Target: func(dir string, r Rules) (string, bool, error) {
				p := filepath.Join(dir, "planted")
				return p, r.Writable(p), nil
			},
			Try: func(p string) error { return os.WriteFile(p, []byte("planted by the probe"), 0o600) },
		},
		{
			Name: "connect-tcp",
			What: "connect to a TCP port not granted (127.0.0.1)",
			Target: func(_ string, r Rules) (string, bool, error) {
				// The port of a listener just closed: free, and
				// named in no grant but "any". A refused connect
				// (nothing listens) still shows the sandbox let it
				// through, since Landlock answers before the
				// network does.
				ln, err := net.Listen("tcp4", "127.0.0.1:0")
				if err != nil {
					return "", false, err
				}
				addr := ln.Addr().(*net.TCPAddr)
				ln.Close()
				return addr.String(), r.Connect.Any || slices.Contains(r.Connect.List, uint16(addr.Port)), nil
			},
			Try: func(addr string) error {
				c, err := net.DialTimeout("tcp", addr, probeDialTimeout)
				if errors.Is(err, syscall.ECONNREFUSED) {
					return nil // reached the network: allowed
				}
				if err == nil {
					c.Close()
				}
				return err
			},
		},
		{
			Name: "send-udp",
			What: "send a UDP datagram (127.0.0.1), as a DNS query would carry data out",
			Target: func(_ string, r Rules) (string, bool, error) {
				// A free port: the send succeeds whether or not
				// anything listens, so only the sandbox refuses.
				pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
				if err != nil {
					return "", false, err
				}
				addr := pc.LocalAddr().String()
				pc.Close()
				return addr, r.UDP, nil
			},
			Try: func(addr string) error {
				c, err := net.Dial("udp", addr)
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = c.Write([]byte("probe"))
				return err
			},
		},
		{
			Name: "connect-unix",
			What: "connect to a pathname unix socket (as to a Docker socket or D-Bus)",
			Target: func(dir string, r Rules) (string, bool, error) {
				// A socket file nothing listens on any more: a
				// refused connect still shows the sandbox let it
				// through.
				p := filepath.Join(dir, "probe.sock")
				ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
				if err != nil {
					return "", false, err
				}
				ln.SetUnlinkOnClose(false)
				ln.Close()
				return p, r.Unix, nil
			},
			Try: func(p string) error {
				c, err := net.DialTimeout("unix", p, probeDialTimeout)
				if errors.Is(err, syscall.ECONNREFUSED) {
					return nil // reached the socket: allowed
				}
				if err == nil {
					c.Close()
				}
				return err
			},
		},
	}
}

// runProbe is the probe process: it runs the probe name against target,
// prints the outcome on stdout and exits with probeAllowed, probeRefused
// or probeFailed.
func runProbe(args []string) {
	if len(args) != 2 {
		fmt.Println("usage: probe NAME TARGET")
		os.Exit(probeFailed)
	}
	for _, p := range Probes() {
		if p.Name != args[0] {
			continue
		}
		err := p.Try(args[1])
		switch {
		case err == nil:
			fmt.Println("allowed")
			os.Exit(probeAllowed)
		case permissionError(err):
			fmt.Println(err)
			os.Exit(probeRefused)
		default:
			fmt.Println(err)
			os.Exit(probeFailed)
		}
	}
	fmt.Printf("no probe %q\n", args[0])
	os.Exit(probeFailed)
}

// permissionError reports whether err is the kernel's refusal.
func permissionError(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}
