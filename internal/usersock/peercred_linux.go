package usersock

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// CheckPeer returns an error unless the process at the other end of c (a
// Unix socket connection) runs as uid, as the kernel tells it
// (SO_PEERCRED).
func CheckPeer(c net.Conn, uid int) error {
	cred, err := peer(c)
	if err != nil {
		return err
	}
	if int(cred.Uid) != uid {
		return fmt.Errorf("pid %d runs as uid %d, not %d: only the socket's user may connect", cred.Pid, cred.Uid, uid)
	}
	return nil
}

// PeerPID returns the process id at the other end of c as the kernel
// tells it, or 0 when it cannot.
func PeerPID(c net.Conn) int {
	cred, err := peer(c)
	if err != nil {
		return 0
	}
	return int(cred.Pid)
}

func peer(c net.Conn) (*unix.Ucred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("not a Unix socket connection: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, fmt.Errorf("read the peer's credentials: %w", credErr)
	}
	return cred, nil
}
