package control

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// CheckPeer returns an error unless the process at the other end of c (a
// Unix socket connection) runs as uid, as the kernel tells it
// (SO_PEERCRED).
func CheckPeer(c net.Conn, uid int) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a Unix socket connection: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("read the peer's credentials: %w", credErr)
	}
	if int(cred.Uid) != uid {
		return fmt.Errorf("pid %d runs as uid %d, not %d: only the host's user may connect", cred.Pid, cred.Uid, uid)
	}
	return nil
}
