package serve

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// notifier tells a service manager serve's state by the sd_notify(3)
// protocol, so that a systemd unit of Type=notify is started once serve
// answers and knows when it drains: one datagram per state to the
// unixgram socket NOTIFY_SOCKET names (a path, or @name for an abstract
// socket). A nil notifier (no NOTIFY_SOCKET) sends nothing.
//
// Under a unit's WatchdogSec=, the manager sets WATCHDOG_USEC: serve then
// sends WATCHDOG=1 every half of it while it is healthy (watch), and the
// manager restarts a serve that stops sending: one wedged on the host's
// lock, or whose gateway no longer answers its /healthz.
type notifier struct {
	addr     *net.UnixAddr
	logger   *slog.Logger
	watchdog time.Duration // WATCHDOG_USEC, 0 without
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
	watchdog := watchdogInterval(logger)
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
	return &notifier{addr: &net.UnixAddr{Name: name, Net: "unixgram"}, logger: logger, watchdog: watchdog}
}

// watchdogInterval reads WATCHDOG_USEC and WATCHDOG_PID and takes them out
// of the environment (the servers are not the watched process), as
// sd_watchdog_enabled does: 0 without them, when WATCHDOG_PID names
// another process, or when WATCHDOG_USEC is not a positive number.
func watchdogInterval(logger *slog.Logger) time.Duration {
	usec, ok := os.LookupEnv("WATCHDOG_USEC")
	pid, pidSet := os.LookupEnv("WATCHDOG_PID")
	os.Unsetenv("WATCHDOG_USEC")
	os.Unsetenv("WATCHDOG_PID")
	if !ok {
		return 0
	}
	if pidSet && pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0 // the watchdog is another process's
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 || n > uint64(time.Duration(1<<62)/time.Microsecond) {
		logger.Warn("WATCHDOG_USEC is not a positive number of microseconds; the service manager's watchdog is not fed", "WATCHDOG_USEC", usec)
		return 0
	}
	return time.Duration(n) * time.Microsecond
}

// watch sends WATCHDOG=1 every half of the watchdog's interval while
// healthy answers nil within a quarter of it, until the returned stop.
// An unhealthy answer is logged once (and once when health is back), and
// no keep-alive is sent: the manager's restart is what it is for.
func (n *notifier) watch(healthy func(context.Context) error) (stop func()) {
	if n == nil || n.watchdog == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(max(n.watchdog/2, time.Millisecond))
		defer tick.Stop()
		failing := false
		for {
			hctx, hcancel := context.WithTimeout(ctx, max(n.watchdog/4, time.Millisecond))
			err := healthy(hctx)
			hcancel()
			switch {
			case ctx.Err() != nil:
				return
			case err == nil:
				if failing {
					n.logger.Info("healthy again: the service manager's watchdog is fed again")
					failing = false
				}
				n.send("WATCHDOG=1")
			case !failing:
				n.logger.Warn("not healthy: the service manager's watchdog is not fed, and restarts serve past WatchdogSec", "err", err)
				failing = true
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// probeHealthz GETs /healthz of serve's own gateway at endpoint (its MCP
// URL), on the loopback when it listens on every address. The certificate
// of an https gateway is not verified: this is serve asking its own
// listener, whose certificate names its public host.
func probeHealthz(ctx context.Context, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		loop := "127.0.0.1"
		if ip.To4() == nil {
			loop = "::1"
		}
		u.Host = net.JoinHostPort(loop, u.Port())
	}
	u.Path, u.RawQuery = "/healthz", ""
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // our own listener, see above
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return nil
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
