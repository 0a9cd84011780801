package sandbox

import (
	"fmt"
	"slices"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter closes what Landlock (as used, up to ABI 8) leaves
// open: UDP, which carries DNS queries out of a server allowed no network
// at all, and unix sockets reached by path (a Docker socket, D-Bus), which
// Landlock cannot see. Seccomp sees a call's arguments but not the memory
// they point to, so it cannot read an address: it decides at socket(),
// from the family, type and protocol, and refuses every socket it does
// not know to be governed:
//
//   - TCP over IPv4 and IPv6 (protocol 0 or IPPROTO_TCP): Landlock
//     governs its ports. MPTCP, SCTP and raw sockets are refused, as
//     Landlock's port rules do not apply to them and a raw socket (root's)
//     could send anything.
//   - UDP (protocol 0 or IPPROTO_UDP) when the entry allows it.
//   - Unix sockets when the entry allows them; without, socketpair of
//     stream or seqpacket type (Node and Python start children over
//     them), which are connected at birth and cannot be pointed elsewhere.
//     A datagram pair can (sendto with an address), so it is refused.
//   - Netlink route sockets: glibc's getaddrinfo and Node's
//     os.networkInterfaces list addresses with them. They change nothing
//     without CAP_NET_ADMIN (root's, which the sandbox does not take).
//
// io_uring is refused (ENOSYS, so that libuv falls back to threads): its
// operations open and connect sockets without the system calls the filter
// sees. A foreign-architecture call (a 32-bit call on a 64-bit kernel,
// where socketcall multiplexes what the filter checks) kills the process.
//
// Arguments are compared as the 64 bits the kernel passes: a family or
// protocol with high bits set (which the kernel ignores) matches no
// allowed form, so it is refused; the filter fails closed. The type's
// high bits are ignored, as the kernel ignores them.

// Socket families, types and protocols the filter names.
const (
	afUnix    = unix.AF_UNIX
	afInet    = unix.AF_INET
	afInet6   = unix.AF_INET6
	afNetlink = unix.AF_NETLINK
	// sockTypeMask keeps a socket type's base from its flags
	// (SOCK_NONBLOCK, SOCK_CLOEXEC).
	sockTypeMask = 0xf
)

// refused is the action of a socket call the entry does not allow:
// EACCES, socket(2)'s "permission to create a socket of the specified type
// is denied", as Landlock refuses a connect.
const refused = seccomp.ActionErrno | seccomp.Action(unix.EACCES)

// seccompSupport reports whether the kernel can load a seccomp filter,
// and when not, why.
func seccompSupport() (bool, string) {
	if !seccomp.Supported() {
		return false, "this Linux kernel does not offer seccomp filters (CONFIG_SECCOMP_FILTER)"
	}
	return true, ""
}

// seccompPolicies are the filters for s (see the comment at the top),
// one per system call with conditions on its arguments. The library
// (v1.6.0) does not load the syscall number again after a failed argument
// check, so a group after one would compare an argument with syscall
// numbers; alone in its filter, a failed check ends at the default
// action. The filters are stacked: the kernel runs each and takes the
// most restrictive answer. Each filter names what it refuses (the
// complement of what is allowed), so that a form it did not foresee is
// refused too.
func seccompPolicies(s *spec) []seccomp.Policy {
	var socket, pair [][]seccomp.Condition
	// Families other than those allowed.
	other := []seccomp.Condition{ne(0, afInet), ne(0, afInet6), ne(0, afNetlink)}
	if s.Unix {
		other = append(other, ne(0, afUnix))
	}
	socket = append(socket, other)
	inet := []struct {
		base  uint64
		proto uint64
	}{{unix.SOCK_STREAM, unix.IPPROTO_TCP}}
	if s.UDP {
		inet = append(inet, struct{ base, proto uint64 }{unix.SOCK_DGRAM, unix.IPPROTO_UDP})
	}
	for _, family := range []uint64{afInet, afInet6} {
		var bases []uint64
		for _, k := range inet {
			bases = append(bases, k.base)
			// An allowed type with another protocol (MPTCP, SCTP,
			// UDP-Lite, ICMP).
			socket = append(socket, append([]seccomp.Condition{eq(0, family), ne(2, 0), ne(2, k.proto)}, typeIs(1, k.base)...))
		}
		for _, b := range otherBases(bases...) {
			socket = append(socket, append([]seccomp.Condition{eq(0, family)}, typeIs(1, b)...))
		}
	}
	socket = append(socket, []seccomp.Condition{eq(0, afNetlink), ne(2, unix.NETLINK_ROUTE)})
	pair = append(pair, []seccomp.Condition{ne(0, afUnix)})
	if !s.Unix {
		for _, b := range otherBases(unix.SOCK_STREAM, unix.SOCK_SEQPACKET) {
			pair = append(pair, append([]seccomp.Condition{eq(0, afUnix)}, typeIs(1, b)...))
		}
	}
	refuse := func(name string, sets [][]seccomp.Condition) seccomp.Policy {
		g := seccomp.SyscallGroup{Action: refused}
		for _, c := range sets {
			g.NamesWithCondtions = append(g.NamesWithCondtions, seccomp.NameWithConditions{Name: name, Conditions: c})
		}
		return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{g}}
	}
	policies := []seccomp.Policy{
		refuse("socket", socket),
		refuse("socketpair", pair),
		{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{{
			Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
			Names:  []string{"io_uring_setup", "io_uring_enter", "io_uring_register"},
		}}},
	}
	if info, err := arch.GetInfo(""); err == nil {
		if _, ok := info.SyscallNames["socketcall"]; ok {
			// 386 multiplexes socket() through socketcall, whose
			// arguments are in memory the filter cannot read: refused,
			// so that a C library falls back to socket().
			policies = append(policies, seccomp.Policy{DefaultAction: seccomp.ActionAllow,
				Syscalls: []seccomp.SyscallGroup{{Action: refused, Names: []string{"socketcall"}}}})
		}
	}
	return policies
}

func eq(arg uint32, v uint64) seccomp.Condition {
	return seccomp.Condition{Argument: arg, Operation: seccomp.Equal, Value: v}
}

func ne(arg uint32, v uint64) seccomp.Condition {
	return seccomp.Condition{Argument: arg, Operation: seccomp.NotEqual, Value: v}
}

// otherBases are the socket type bases (0 to 15) other than allowed.
func otherBases(allowed ...uint64) []uint64 {
	var out []uint64
	for b := uint64(0); b <= sockTypeMask; b++ {
		if !slices.Contains(allowed, b) {
			out = append(out, b)
		}
	}
	return out
}

// typeIs matches a socket type argument whose base (flags masked off) is
// t: the library compares bits, not masked values, so each of the base's
// four bits is checked set or clear. The bits above the int the kernel
// reads are not checked, as the kernel ignores them.
func typeIs(arg uint32, t uint64) []seccomp.Condition {
	var conds []seccomp.Condition
	var clear uint64
	for bit := uint64(1); bit <= sockTypeMask; bit <<= 1 {
		if t&bit != 0 {
			conds = append(conds, seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: bit})
		} else {
			clear |= bit
		}
	}
	if clear != 0 {
		conds = append(conds, seccomp.Condition{Argument: arg, Operation: seccomp.BitsNotSet, Value: clear})
	}
	return conds
}

// seccompPrograms assembles s's filters, in the order they are installed:
// first a check of our own, as the library's programs let a call of a
// foreign architecture through to their default action (allow), which
// kills the process instead.
func seccompPrograms(s *spec) ([][]bpf.Instruction, error) {
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("the seccomp filter: %w", err)
	}
	progs := [][]bpf.Instruction{{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
		bpf.RetConstant{Val: uint32(seccomp.ActionAllow)},
	}}
	for _, p := range seccompPolicies(s) {
		insts, err := p.Assemble()
		if err != nil {
			return nil, fmt.Errorf("assemble the seccomp filter: %w", err)
		}
		progs = append(progs, insts)
	}
	return progs, nil
}

// buildSeccomp assembles s's filters for installSeccomp.
func buildSeccomp(s *spec) ([]*unix.SockFprog, error) {
	progs, err := seccompPrograms(s)
	if err != nil {
		return nil, err
	}
	out := make([]*unix.SockFprog, len(progs))
	for i, insts := range progs {
		raw, err := bpf.Assemble(insts)
		if err != nil {
			return nil, fmt.Errorf("assemble the seccomp filter: %w", err)
		}
		filter := make([]unix.SockFilter, len(raw))
		for j, r := range raw {
			filter[j] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
		}
		out[i] = &unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	}
	return out, nil
}

// installSeccomp installs progs on every thread of this process (the
// launcher, about to exec the server; no_new_privs is already set).
func installSeccomp(progs []*unix.SockFprog) error {
	for _, prog := range progs {
		if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(prog))); errno != 0 {
			return fmt.Errorf("load the seccomp filter: %w", errno)
		}
	}
	return nil
}
