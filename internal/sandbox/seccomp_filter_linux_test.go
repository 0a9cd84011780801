package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// wantSocket is what the filter must decide for socket(dom, typ, proto),
// written plainly: the filter's own form (the refusals, one filter per
// call) is easy to get wrong, and the library's was (seccompPolicies).
// Arguments are ints the kernel reads from 64-bit registers: a family or
// protocol with high bits set is refused (a form not foreseen), the high
// bits of the type are ignored, as the kernel does.
func wantSocket(s *spec, dom, typ, proto uint64) bool {
	base := typ & sockTypeMask
	switch dom {
	case afInet, afInet6:
		return base == unix.SOCK_STREAM && (proto == 0 || proto == unix.IPPROTO_TCP) ||
			s.UDP && base == unix.SOCK_DGRAM && (proto == 0 || proto == unix.IPPROTO_UDP)
	case afNetlink:
		return proto == unix.NETLINK_ROUTE
	case afUnix:
		return s.Unix
	}
	return false
}

func wantSocketpair(s *spec, dom, typ uint64) bool {
	base := typ & sockTypeMask
	return dom == afUnix && (s.Unix || base == unix.SOCK_STREAM || base == unix.SOCK_SEQPACKET)
}

// runFilters runs the stacked programs on one call, as the kernel does:
// every filter runs and the most restrictive action wins (the lowest,
// as a signed number, of the action bits).
func runFilters(t *testing.T, progs [][]bpf.Instruction, auditArch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	// seccomp_data, laid out for x/net/bpf's VM, which loads words
	// big-endian: each 32-bit word so, the words of an argument in the
	// order of a little-endian host (low word first), as the library
	// reads them there.
	in := make([]byte, 64)
	binary.BigEndian.PutUint32(in[0:], nr)
	binary.BigEndian.PutUint32(in[4:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(in[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(in[16+8*i+4:], uint32(a>>32))
	}
	best := uint32(seccomp.ActionAllow)
	for _, p := range progs {
		vm, err := bpf.NewVM(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := vm.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if int32(uint32(r)&unix.SECCOMP_RET_ACTION_FULL) < int32(best&unix.SECCOMP_RET_ACTION_FULL) {
			best = uint32(r)
		}
	}
	return best
}

// TestSeccompFilterDecides runs the assembled filters in a BPF machine
// over every socket family, type and protocol worth naming (and forms a
// hostile server could forge: high bits, a foreign architecture, the x32
// ABI), against wantSocket: the filter allows exactly what it should.
// A filter with the library's missing reload of the syscall number
// (a group after an argument check) fails this.
func TestSeccompFilterDecides(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the layout below is a little-endian host's")
	}
	info, err := arch.GetInfo("")
	if err != nil {
		t.Skip(err)
	}
	nr := func(name string) uint32 { return uint32(info.SyscallNames[name]) }
	denied := uint32(refused)
	allow := uint32(seccomp.ActionAllow)
	high := uint64(1) << 32
	// The families allowed, their neighbours, and some a server could
	// misuse: AF_PACKET, AF_BLUETOOTH, AF_VSOCK, AF_XDP, the last one.
	doms := []uint64{0, afUnix, afInet, 3, 9, afInet6, 11, afNetlink, 15, unix.AF_PACKET, 31, unix.AF_VSOCK, unix.AF_XDP, unix.AF_MAX - 1,
		high | afInet, high | afUnix, high | afNetlink}
	protos := []uint64{0, 1, unix.IPPROTO_TCP, unix.IPPROTO_UDP, unix.IPPROTO_SCTP, unix.IPPROTO_UDPLITE, unix.IPPROTO_MPTCP, 255, high | unix.IPPROTO_TCP, high}
	flags := []uint64{0, unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, high}
	for _, s := range []*spec{{}, {Rules: Rules{UDP: true}}, {Rules: Rules{Unix: true}}, {Rules: Rules{UDP: true, Unix: true}}} {
		progs, err := seccompPrograms(s)
		if err != nil {
			t.Fatal(err)
		}
		check := func(name string, got, want uint32) {
			if got != want {
				t.Errorf("udp %v, unix %v: %s = %#x, want %#x", s.UDP, s.Unix, name, got, want)
			}
		}
		for _, dom := range doms {
			for base := uint64(0); base <= sockTypeMask; base++ {
				for _, fl := range flags {
					typ := base | fl
					for _, proto := range protos {
						want := allow
						if !wantSocket(s, dom, typ, proto) {
							want = denied
						}
						check(fmt.Sprintf("socket(%#x, %#x, %#x)", dom, typ, proto), runFilters(t, progs, uint32(info.ID), nr("socket"), dom, typ, proto), want)
					}
					want := allow
					if !wantSocketpair(s, dom, typ) {
						want = denied
					}
					check(fmt.Sprintf("socketpair(%#x, %#x, 0)", dom, typ), runFilters(t, progs, uint32(info.ID), nr("socketpair"), dom, typ, 0), want)
				}
			}
		}
		// Other calls, whatever their arguments, pass; io_uring does not.
		for _, name := range []string{"connect", "sendto", "read", "execve", "clone"} {
			check(name, runFilters(t, progs, uint32(info.ID), nr(name), afUnix, unix.SOCK_DGRAM, 0), allow)
		}
		check("io_uring_setup", runFilters(t, progs, uint32(info.ID), nr("io_uring_setup"), 1), uint32(seccomp.ActionErrno)|uint32(unix.ENOSYS))
		// socket through the x32 ABI, and through a foreign one.
		check("x32 socket", runFilters(t, progs, uint32(info.ID), nr("socket")|0x40000000, afInet, unix.SOCK_DGRAM, 0), uint32(seccomp.ActionErrno)|uint32(unix.ENOSYS))
		check("i386 socketcall", runFilters(t, progs, uint32(arch.I386.ID), 102, 1, 0, 0), uint32(seccomp.ActionKillProcess))
	}
}
