package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// actEnv makes the test binary, started as a server by Start, try one
// thing a compromised server would (its name, with actTarget the
// address, path or count) and print "ok" or the error it got.
const (
	actEnv    = "SANDBOX_TEST_ACT"
	actTarget = "SANDBOX_TEST_TARGET"
)

// runAct is the server side of act: it tries what actEnv names.
func runAct(name string) {
	target := os.Getenv(actTarget)
	n, _ := strconv.Atoi(target)
	var err error
	switch name {
	case "udp":
		err = sendUDP(target)
	case "unix":
		var c net.Conn
		if c, err = net.DialTimeout("unix", target, 5*time.Second); err == nil {
			c.Close()
		}
	case "tcp":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", target, 5*time.Second); err == nil {
			c.Close()
		}
	case "mptcp":
		err = rawConnect(target, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, 0)
	case "fastopen":
		err = rawConnect(target, unix.SOCK_STREAM, 0, unix.MSG_FASTOPEN)
	case "raw":
		err = closeFD(unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_UDP))
	case "packet":
		err = closeFD(unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, 0))
	case "highbits":
		// AF_INET with bits above the int the kernel reads: the kernel
		// makes a UDP socket of it; a filter that compared only
		// some bits would let it through.
		high := uint64(1) << 32 // a variable: on a 32-bit build it is cut
		fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(high|unix.AF_INET), unix.SOCK_DGRAM, 0)
		err = closeFD(int(fd), errnoErr(e))
	case "streampair", "dgrampair":
		typ := unix.SOCK_STREAM
		if name == "dgrampair" {
			typ = unix.SOCK_DGRAM
		}
		var fds [2]int
		if fds, err = unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0); err == nil {
			if target != "" {
				// A datagram pair can be aimed at a path.
				err = unix.Sendto(fds[0], []byte("x"), 0, &unix.SockaddrUnix{Name: target})
			}
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
	case "iouring":
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		err = closeFD(int(fd), errnoErr(e))
	case "fork":
		err = forkMany(n)
	case "alloc":
		// mmap, as the runtimes' heaps grow: RLIMIT_DATA counts private
		// writable mappings.
		var b []byte
		if b, err = unix.Mmap(-1, 0, n<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
			unix.Munmap(b)
		}
	case "open":
		err = openMany(n)
	case "capbnd":
		// Whether CAP_SYS_RESOURCE is left in the bounding set.
		var b []byte
		if b, err = os.ReadFile("/proc/self/status"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
					bits, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
					if bits&(1<<unix.CAP_SYS_RESOURCE) != 0 {
						err = errors.New("CAP_SYS_RESOURCE bounded in")
					}
				}
			}
		}
	case "raise":
		// The server raising its own file limit back.
		err = syscall.Setrlimit(unix.RLIMIT_NOFILE, &syscall.Rlimit{Cur: uint64(n), Max: uint64(n)})
	default:
		err = fmt.Errorf("unknown act %q", name)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ok")
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func closeFD(fd int, err error) error {
	if err == nil {
		unix.Close(fd)
	}
	return err
}

func sendUDP(addr string) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte("exfiltrated"))
	return err
}

// rawConnect connects to a loopback TCP address with a socket of the
// given protocol, or by sendto with flags (TCP Fast Open), bypassing Go's
// net package.
func rawConnect(addr string, typ, proto, flags int) error {
	ap, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, typ, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrInet4{Port: ap.Port, Addr: [4]byte(ap.IP.To4())}
	if flags != 0 {
		return unix.Sendto(fd, []byte("x"), flags, sa)
	}
	return unix.Connect(fd, sa)
}

// forkMany starts n processes that sleep, then ends them: the first
// error is the process limit's.
func forkMany(n int) error {
	var started []*exec.Cmd
	defer func() {
		for _, c := range started {
			c.Process.Kill()
			c.Wait()
		}
	}()
	for range n {
		c := exec.Command("/bin/sleep", "60")
		if err := c.Start(); err != nil {
			return err
		}
		started = append(started, c)
	}
	return nil
}

func openMany(n int) error {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for range n {
		f, err := os.Open("/dev/null")
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	return nil
}

// nobody is the uid and gid the limit tests run servers as when the
// test runs as root, whom RLIMIT_NPROC does not bind.
const nobody = 65534

// runServer starts cmd (a server command, not yet rewritten) under cfg,
// as uid when uid >= 0, and returns its stdout, trimmed. A launcher
// binary a user other than root can run is the caller's (asUser).
func runServer(t *testing.T, cmd *exec.Cmd, cfg Config, launcher string) (string, *Launch) {
	t.Helper()
	l, err := Start(cmd, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Cleanup()
	if launcher != "" && l.Sandboxed {
		cmd.Path, cmd.Args[0] = launcher, launcher
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		err = <-done
	}
	out := strings.TrimSpace(stdout.String())
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		out += fmt.Sprintf(" [%v; stderr: %s]", err, strings.TrimSpace(stderr.String()))
	}
	return out, l
}

// act runs the test binary as a server under cfg, trying name on target.
func act(t *testing.T, cfg Config, name, target string) string {
	t.Helper()
	out, _ := runServer(t, actCmd(os.Args[0], name, target), cfg, "")
	return out
}

func actCmd(exe, name, target string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = []string{actEnv + "=" + name, actTarget + "=" + target, "PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	cmd.Dir = "/"
	return cmd
}

// userBinary returns a copy of the test binary that user nobody can run
// (go test builds it under a directory only root may enter).
func userBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dsh-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// asNobody makes cmd run as user nobody.
func asNobody(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
}

// needSandbox skips a test without Landlock and seccomp, and fails it
// under CI=true, where the sandbox must be tested.
func needSandbox(t *testing.T) {
	t.Helper()
	abi, why := Support()
	ok, noFilter := seccompSupport()
	if abi > 0 && ok {
		return
	}
	if why == "" {
		why = noFilter
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Landlock and seccomp are required under CI=true: %s", why)
	}
	t.Skip(why)
}
