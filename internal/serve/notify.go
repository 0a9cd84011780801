package serve

import (
	"log/slog"
	"net"
	"os"
	"strings"
	"time"
)

// notifier tells a service manager serve's state by the sd_notify(3)
// protocol, so that a systemd unit of Type=notify is started once serve
// answers and knows when it drains: one datagram per state to the
// unixgram socket NOTIFY_SOCKET names (a path, or @name for an abstract
// socket). A nil notifier (no NOTIFY_SOCKET) sends nothing.
type notifier struct {
	addr   *net.UnixAddr
	logger *slog.Logger
}

// notifyTimeout bounds one send: a manager that does not read its socket
// must not hold serve's start or drain.
const notifyTimeout = 2 * time.Second

// newNotifier reads NOTIFY_SOCKET and takes it out of the environment, as
// sd_notify's unset_environment does: the MCP servers serve starts
// inherit its environment, and none of them is the service whose state
// the manager asked for.
func newNotifier(logger *slog.Logger) *notifier {
	name, ok := os.LookupEnv("NOTIFY_SOCKET")
	if !ok {
		return nil
	}
	os.Unsetenv("NOTIFY_SOCKET")
	if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "@") || len(name) < 2 {
		// systemd's other forms (vsock:) are for virtual machines.
		logger.Warn("NOTIFY_SOCKET is neither an absolute path nor an abstract @name; the service manager is not told serve's state", "NOTIFY_SOCKET", name)
		return nil
	}
	// Go's unix addresses take a leading @ as the abstract namespace.
	return &notifier{addr: &net.UnixAddr{Name: name, Net: "unixgram"}, logger: logger}
}

// send sends state (lines of KEY=VALUE) as one datagram; a failure is
// logged, never fatal: serve serves whether or not its manager listens.
func (n *notifier) send(state string) {
	if n == nil {
		return
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err == nil {
		conn.SetWriteDeadline(time.Now().Add(notifyTimeout))
		_, err = conn.Write([]byte(state))
		conn.Close()
	}
	if err != nil {
		n.logger.Warn("could not notify the service manager", "NOTIFY_SOCKET", n.addr.Name, "state", strings.ReplaceAll(state, "\n", " "), "err", err)
	}
}
