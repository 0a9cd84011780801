package askbroker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/internal/usersock"
)

// Broker is the console's side: it holds the composition's broker socket,
// keeps the asks the hosts of the composition send, and answers them as
// the console says.
type Broker struct {
	composition string
	ln          net.Listener
	unlock      func()
	wg          sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	pending map[string]*pending
	conns   map[*conn]struct{}
	subs    map[chan Event]func() bool // the channel and its AfterFunc's stop
}

// pending is an open ask and where its answer goes.
type pending struct {
	ask   Ask
	c     *conn
	ref   int
	timer *time.Timer
}

// Listen claims the broker socket of the composition in file for this
// process, the console. ErrInUse: another console holds it.
func Listen(file string) (*Broker, error) {
	abs, err := usersock.Resolve(file)
	if err != nil {
		return nil, err
	}
	path, err := usersock.PathOf(abs, suffix)
	if err != nil {
		return nil, err
	}
	ln, unlock, err := usersock.Listen(path)
	if errors.Is(err, usersock.ErrInUse) {
		return nil, fmt.Errorf("%s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("the approval broker: %w", err)
	}
	b := &Broker{composition: abs, ln: ln, unlock: unlock,
		pending: map[string]*pending{}, conns: map[*conn]struct{}{}, subs: map[chan Event]func() bool{}}
	b.wg.Go(b.accept)
	return b, nil
}

// Composition returns the absolute path of the composition whose asks b
// takes.
func (b *Broker) Composition() string { return b.composition }

// Pending returns the open asks, oldest first.
func (b *Broker) Pending() []Ask {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Ask, 0, len(b.pending))
	for _, p := range b.pending {
		out = append(out, p.ask)
	}
	slices.SortFunc(out, func(x, y Ask) int {
		if c := x.Asked.Compare(y.Asked); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out
}

// Subscribe returns the events of the open asks from now until ctx ends
// or b closes (then the channel is closed). A reader more than a few
// dozen events behind loses the next ones rather than hold the broker up:
// Pending says what is open.
func (b *Broker) Subscribe(ctx context.Context) <-chan Event {
	ch := make(chan Event, subBuffer)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch
	}
	b.subs[ch] = context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	})
	return ch
}

// Answer answers the open ask id. An id of no open ask (never asked,
// answered already, expired) is ErrNoAsk; an approval the asking host
// does not take (Session for a caller that has no session) is an error,
// and the ask stays open.
func (b *Broker) Answer(id string, a Answer) error {
	if !validAnswer(a) {
		return fmt.Errorf("unknown answer %q: want once, session, always or deny", a)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.pending[id]
	if !ok {
		return fmt.Errorf("ask %q: %w (answered already, expired, or never asked)", id, ErrNoAsk)
	}
	if a != Deny && !slices.Contains(p.ask.Choices, a) {
		return fmt.Errorf("ask %q: the asking host does not take %q; it takes %v or deny", id, a, p.ask.Choices)
	}
	b.finishLocked(p, &reply{Ref: p.ref, Answer: a}, Event{Answered: id, Answer: a})
	return nil
}

// Close stops taking asks and denies every open one; its hosts get the
// denial. Subscribers' channels are closed.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	err := b.ln.Close()
	for _, p := range b.pending {
		b.finishLocked(p, &reply{Ref: p.ref, Refused: "the console closed"}, Event{Expired: p.ask.ID})
	}
	for c := range b.conns {
		c.closeWhenFlushed()
	}
	for ch, stop := range b.subs {
		stop()
		close(ch)
		delete(b.subs, ch)
	}
	b.mu.Unlock()
	b.wg.Wait()
	b.unlock()
	return err
}

// finishLocked ends p: its host gets r (none when nil: it withdrew the
// ask, or went away), subscribers ev.
func (b *Broker) finishLocked(p *pending, r *reply, ev Event) {
	delete(b.pending, p.ask.ID)
	delete(p.c.open, p.ref)
	if p.timer != nil {
		p.timer.Stop()
	}
	if r != nil {
		p.c.send(*r)
	}
	p.c.idle()
	b.emitLocked(ev)
}

func (b *Broker) emitLocked(ev Event) {
	for ch := range b.subs {
		select {
		case ch <- ev:
		default: // a slow reader loses it; Pending has the truth
		}
	}
}

func (b *Broker) accept() {
	uid := os.Getuid()
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			return
		}
		if err := usersock.CheckPeer(nc, uid); err != nil {
			nc.Close()
			continue
		}
		c := &conn{b: b, nc: nc, out: make(chan reply, 2*maxAsksPerConn+2), open: map[int]*pending{}, pid: usersock.PeerPID(nc)}
		b.mu.Lock()
		if b.closed || len(b.conns) >= maxConns {
			b.mu.Unlock()
			nc.Close()
			continue
		}
		b.conns[c] = struct{}{}
		b.mu.Unlock()
		b.wg.Go(c.write)
		b.wg.Go(c.read)
	}
}

// conn is one host's connection. Its replies go through out to write, so
// that the broker never waits on a host under its lock.
type conn struct {
	b   *Broker
	nc  net.Conn
	pid int
	out chan reply // closed by closeWhenFlushed, under b.mu

	// open and done are guarded by b.mu.
	open map[int]*pending
	done bool
}

// send queues r; a connection whose queue is full (it cannot be: each ask
// takes at most one reply, an error the last) is cut. Under b.mu.
func (c *conn) send(r reply) {
	if c.done {
		return
	}
	select {
	case c.out <- r:
	default:
		c.closeWhenFlushed()
	}
}

// closeWhenFlushed ends c once its queued replies are written. Under b.mu.
func (c *conn) closeWhenFlushed() {
	if !c.done {
		c.done = true
		close(c.out)
	}
}

func (c *conn) write() {
	defer c.nc.Close() // ends read too
	enc := json.NewEncoder(c.nc)
	for r := range c.out {
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err := enc.Encode(r); err != nil {
			// A host that does not read loses its connection, and so
			// its asks.
			c.nc.Close()
		}
	}
}

func (c *conn) read() {
	defer c.gone()
	// A line that panics the broker ends its connection (its asks
	// expire), never the console's process, which may be the host's.
	defer func() { _ = recover() }()
	sc := bufio.NewScanner(c.nc)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	c.nc.SetReadDeadline(time.Now().Add(idleTimeout))
	for sc.Scan() {
		if err := c.handle(sc.Bytes()); err != nil {
			c.b.mu.Lock()
			c.send(reply{Error: err.Error()})
			c.closeWhenFlushed()
			c.b.mu.Unlock()
			return
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		c.b.mu.Lock()
		c.send(reply{Error: fmt.Sprintf("a line past %d bytes", MaxLine)})
		c.closeWhenFlushed()
		c.b.mu.Unlock()
	}
}

// gone ends c's open asks (its host went away, or broke the protocol).
func (c *conn) gone() {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range c.open {
		b.finishLocked(p, nil, Event{Expired: p.ask.ID})
	}
	c.closeWhenFlushed()
	delete(b.conns, c)
}

// handle takes one line of c's host; an error ends the connection.
func (c *conn) handle(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var req request
	if err := dec.Decode(&req); err != nil {
		return fmt.Errorf("refused: %v (a host sends asks and withdrawals; answers come from the console alone)", err)
	}
	switch {
	case req.Ask != nil && req.Withdraw == 0:
		return c.ask(req.Ask)
	case req.Ask == nil && req.Withdraw != 0:
		c.withdraw(req.Withdraw)
		return nil
	default:
		return errors.New("refused: a line is one ask or one withdrawal")
	}
}

func (c *conn) ask(r *askRequest) error {
	if r.Ref <= 0 {
		return errors.New("refused: an ask needs a ref above 0")
	}
	if r.Tool == "" {
		return errors.New("refused: an ask names its tool")
	}
	for _, a := range r.Choices {
		if a == Deny || !validAnswer(a) {
			return fmt.Errorf("refused: choice %q: want once, session or always", a)
		}
	}
	if len(r.Arguments) > 0 && !json.Valid(r.Arguments) {
		return errors.New("refused: the arguments are not JSON")
	}
	timeout := time.Duration(r.TimeoutMS) * time.Millisecond
	if timeout <= 0 || timeout > MaxTimeout {
		timeout = MaxTimeout
	}
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := c.open[r.Ref]; ok {
		return fmt.Errorf("refused: ref %d is open already", r.Ref)
	}
	refuse := func(why string) error {
		c.send(reply{Ref: r.Ref, Refused: why})
		return nil
	}
	switch {
	case b.closed:
		return refuse("the console closed")
	case len(c.open) >= maxAsksPerConn:
		return refuse(fmt.Sprintf("this connection has %d asks open, the most it may", maxAsksPerConn))
	case len(b.pending) >= maxPending:
		return refuse(fmt.Sprintf("the console has %d asks open, the most it takes", maxPending))
	}
	pid := c.pid
	if pid == 0 {
		pid = r.PID
	}
	now := time.Now()
	p := &pending{c: c, ref: r.Ref, ask: Ask{
		ID: newID(), Composition: b.composition, PID: pid,
		Caller: r.Caller, Server: r.Server, Tool: r.Tool, Arguments: r.Arguments, Preview: r.Preview, Rule: r.Rule,
		Choices: slices.Compact(slices.Clone(r.Choices)), Asked: now, Deadline: now.Add(timeout),
	}}
	b.pending[p.ask.ID] = p
	c.open[r.Ref] = p
	c.nc.SetReadDeadline(time.Time{})
	id := p.ask.ID
	p.timer = time.AfterFunc(timeout, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if p, ok := b.pending[id]; ok {
			b.finishLocked(p, &reply{Ref: p.ref, Refused: fmt.Sprintf("no answer within %s", timeout)}, Event{Expired: id})
		}
	})
	ask := p.ask
	b.emitLocked(Event{Ask: &ask})
	return nil
}

// withdraw ends c's ask ref (its caller gave up); a ref c has not open is
// ignored: it may have been answered as the host withdrew it.
func (c *conn) withdraw(ref int) {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := c.open[ref]; ok {
		b.finishLocked(p, nil, Event{Expired: p.ask.ID})
	}
}

// idle gives a connection left with no ask open idleTimeout to send the
// next. Under b.mu.
func (c *conn) idle() {
	if len(c.open) == 0 && !c.done {
		c.nc.SetReadDeadline(time.Now().Add(idleTimeout))
	}
}

func newID() string {
	var buf [16]byte
	rand.Read(buf[:])
	return hex.EncodeToString(buf[:])
}
