package askbroker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/dsh-host/dsh-host/internal/usersock"
)

// dialTimeout bounds reaching the console's socket: a console that does
// not accept is no console.
const dialTimeout = 2 * time.Second

// brokerGrace is how much longer than the ask's timeout the host waits
// for the broker's own "no answer within" refusal. The broker's clock
// decides an expiry, so the ask has left the console's list before its
// host hears of it; the host's deadline is only the backstop for a broker
// that stops answering.
const brokerGrace = 2 * time.Second

// AskConsole puts a to the console of the composition in file and waits for its
// answer, at most timeout. With no console listening it returns
// ErrNoConsole at once. When no answer comes (timeout, ctx, the console
// going away or refusing the ask) it returns Deny and an error wrapping
// ErrNotAnswered that says why. A's ID, Composition, Asked and Deadline
// are the broker's to set; an empty Choices is Once.
func AskConsole(ctx context.Context, file string, a Ask, timeout time.Duration) (Answer, error) {
	path, err := SocketPath(file)
	if errors.Is(err, usersock.ErrTooLong) {
		return Deny, ErrNoConsole // nobody can listen there
	}
	if err != nil {
		return Deny, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return Deny, ErrNoConsole
	}
	if timeout <= 0 || timeout > MaxTimeout {
		timeout = MaxTimeout
	}
	choices := a.Choices
	if len(choices) == 0 {
		choices = []Answer{Once}
	}
	line, err := json.Marshal(request{Ask: &askRequest{
		Ref: 1, PID: os.Getpid(), Caller: a.Caller, Server: a.Server, Tool: a.Tool,
		Arguments: a.Arguments, Preview: a.Preview, Rule: a.Rule, Choices: choices, TimeoutMS: timeout.Milliseconds(),
	}})
	if err != nil {
		return Deny, fmt.Errorf("the ask: %w", err)
	}
	if len(line) >= MaxLine {
		return Deny, fmt.Errorf("%w: the call's arguments are too large to show at the console (%d bytes)", ErrNotAnswered, len(line))
	}

	ctx, cancel := context.WithTimeout(ctx, timeout+brokerGrace)
	defer cancel()
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		// A socket file nobody accepts on: its console died.
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			return Deny, ErrNoConsole
		}
		return Deny, fmt.Errorf("%w: reach the console: %v", ErrNotAnswered, err)
	}
	defer nc.Close()
	// Whoever answers approves calls: it must be this user's process.
	if err := usersock.CheckPeer(nc, os.Getuid()); err != nil {
		return Deny, fmt.Errorf("%w: the broker socket: %v", ErrNotAnswered, err)
	}
	// The connection is the ask's: closing it withdraws the ask, which
	// is how the caller's giving up reaches the console.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()

	nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := nc.Write(append(line, '\n')); err != nil {
		return Deny, notAnswered(ctx, timeout, err)
	}
	sc := bufio.NewScanner(nc)
	sc.Buffer(make([]byte, 0, 512), 64<<10)
	for sc.Scan() {
		var r reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return Deny, fmt.Errorf("%w: the console's answer: %v", ErrNotAnswered, err)
		}
		switch {
		case r.Error != "":
			return Deny, fmt.Errorf("%w: the console: %s", ErrNotAnswered, r.Error)
		case r.Ref != 1:
			continue // not this ask's
		case r.Refused != "":
			return Deny, fmt.Errorf("%w: %s", ErrNotAnswered, r.Refused)
		case r.Answer == Deny:
			return Deny, nil
		case slices.Contains(choices, r.Answer):
			return r.Answer, nil
		default:
			// Fail closed: an answer the host did not offer.
			return Deny, fmt.Errorf("%w: the console answered %q, which was not offered", ErrNotAnswered, r.Answer)
		}
	}
	err = sc.Err()
	if err == nil {
		err = errors.New("the console went away")
	}
	return Deny, notAnswered(ctx, timeout, err)
}

// notAnswered says why the ask ended with no answer: the caller's ctx,
// the timeout, or err.
func notAnswered(ctx context.Context, timeout time.Duration, err error) error {
	switch {
	case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return fmt.Errorf("%w: no answer within %s", ErrNotAnswered, timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("%w: the call was cancelled: %w", ErrNotAnswered, context.Cause(ctx))
	}
	return fmt.Errorf("%w: %v", ErrNotAnswered, err)
}
