package askbroker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
)

func TestMain(m *testing.M) { leaks.VerifyTestMain(m) }

// composition sets DSH_HOME to a short new directory (socket paths are
// bounded) and returns a composition file's path.
func composition(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dsha")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("DSH_HOME", dir)
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte("plugins: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func listen(t *testing.T, file string) *Broker {
	t.Helper()
	b, err := Listen(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

type result struct {
	a   Answer
	err error
}

// ask runs Ask in the background.
func ask(ctx context.Context, file string, a Ask, timeout time.Duration) <-chan result {
	ch := make(chan result, 1)
	go func() {
		ans, err := AskConsole(ctx, file, a, timeout)
		ch <- result{ans, err}
	}()
	return ch
}

// next returns the next event, failing after a bound.
func next(t *testing.T, events <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the events ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return Event{}
}

func wait(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return within 10s")
	}
	return result{}
}

var call = Ask{Caller: "gateway claude-code", Server: "fixture", Tool: "mcp__fixture__echo",
	Arguments: json.RawMessage(`{"text":"hi"}`), Preview: "--- a.txt\n+++ a.txt\n-hi\n+<b>hi</b>\n", Rule: "rules[0]", Choices: []Answer{Once, Session, Always}}

func TestAskAnswered(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := b.Subscribe(ctx)

	for _, want := range []Answer{Once, Session, Always, Deny} {
		res := ask(context.Background(), file, call, time.Minute)
		ev := next(t, events)
		if ev.Ask == nil {
			t.Fatalf("event %+v, want a new ask", ev)
		}
		got := *ev.Ask
		abs, _ := filepath.EvalSymlinks(file)
		if got.Tool != call.Tool || got.Caller != call.Caller || string(got.Arguments) != string(call.Arguments) || got.Preview != call.Preview ||
			got.Composition != abs || got.PID != os.Getpid() || len(got.ID) != 32 || !got.Deadline.After(got.Asked) {
			t.Errorf("the console sees %+v", got)
		}
		if p := b.Pending(); len(p) != 1 || p[0].ID != got.ID {
			t.Errorf("Pending: %+v, want the one ask", p)
		}
		if err := b.Answer(got.ID, want); err != nil {
			t.Fatal(err)
		}
		r := wait(t, res)
		if r.a != want || r.err != nil {
			t.Errorf("answered %s: the host got %s, %v", want, r.a, r.err)
		}
		if ev := next(t, events); ev.Answered != got.ID || ev.Answer != want {
			t.Errorf("event %+v, want answered %s", ev, want)
		}
		if err := b.Answer(got.ID, want); !errors.Is(err, ErrNoAsk) {
			t.Errorf("answering twice: %v, want ErrNoAsk", err)
		}
	}
	if p := b.Pending(); len(p) != 0 {
		t.Errorf("left open: %+v", p)
	}
}

// TestAskNoConsole: with nobody listening, or a socket file its console
// left behind, Ask says so at once.
func TestAskNoConsole(t *testing.T) {
	file := composition(t)
	if _, err := AskConsole(context.Background(), file, call, time.Hour); !errors.Is(err, ErrNoConsole) {
		t.Errorf("no socket: %v, want ErrNoConsole", err)
	}
	path, _ := SocketPath(file)
	os.MkdirAll(filepath.Dir(path), 0o700)
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if a, err := AskConsole(context.Background(), file, call, time.Hour); !errors.Is(err, ErrNoConsole) || a != Deny {
		t.Errorf("stale socket: %s, %v, want deny and ErrNoConsole", a, err)
	}
	// The next console replaces it.
	b := listen(t, file)
	b.Close()
	if _, err := AskConsole(context.Background(), file, call, time.Hour); !errors.Is(err, ErrNoConsole) {
		t.Errorf("after the console closed: %v, want ErrNoConsole", err)
	}
}

func TestAskTimesOut(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	events := b.Subscribe(t.Context())
	a, err := AskConsole(context.Background(), file, call, 200*time.Millisecond)
	if a != Deny || !errors.Is(err, ErrNotAnswered) || !strings.Contains(err.Error(), "no answer within") {
		t.Errorf("unanswered: %s, %v; want deny, no answer within", a, err)
	}
	// The broker decides the expiry: the ask has left the console's list
	// before its host hears "no answer".
	if p := b.Pending(); len(p) != 0 {
		t.Errorf("the host was told no answer came, but the console still lists %+v", p)
	}
	ev := next(t, events)
	if ev.Ask == nil {
		t.Fatalf("event %+v", ev)
	}
	if e := next(t, events); e.Expired != ev.Ask.ID {
		t.Errorf("event %+v, want %s expired", e, ev.Ask.ID)
	}
	if err := b.Answer(ev.Ask.ID, Once); !errors.Is(err, ErrNoAsk) {
		t.Errorf("answering an expired ask: %v, want ErrNoAsk", err)
	}
}

// TestCallerGivesUp: a caller's cancellation withdraws its ask at the
// console.
func TestCallerGivesUp(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	events := b.Subscribe(t.Context())
	ctx, cancel := context.WithCancel(context.Background())
	res := ask(ctx, file, call, time.Hour)
	ev := next(t, events)
	cancel()
	r := wait(t, res)
	if r.a != Deny || !errors.Is(r.err, ErrNotAnswered) || !strings.Contains(r.err.Error(), "cancelled") {
		t.Errorf("cancelled: %s, %v", r.a, r.err)
	}
	if e := next(t, events); e.Expired != ev.Ask.ID {
		t.Errorf("event %+v, want %s expired", e, ev.Ask.ID)
	}
	if p := b.Pending(); len(p) != 0 {
		t.Errorf("still open: %+v", p)
	}
}

// TestConsoleGoesAway: a console that closes denies what it had open; one
// that dies (its connection ends with no answer) too.
func TestConsoleGoesAway(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	events := b.Subscribe(t.Context())
	res := ask(context.Background(), file, call, time.Hour)
	next(t, events)
	b.Close()
	if r := wait(t, res); r.a != Deny || !errors.Is(r.err, ErrNotAnswered) || !strings.Contains(r.err.Error(), "console closed") {
		t.Errorf("the console closed: %s, %v", r.a, r.err)
	}
	if _, ok := <-events; ok {
		// The Expired event may come first; the channel then closes.
		if _, ok := <-events; ok {
			t.Error("the events go on after Close")
		}
	}

	// A console that dies mid-ask: its socket's other end closes.
	path, _ := SocketPath(file)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		bufio.NewReader(c).ReadString('\n')
		c.Close()
	}()
	if a, err := AskConsole(context.Background(), file, call, time.Hour); a != Deny || !errors.Is(err, ErrNotAnswered) || !strings.Contains(err.Error(), "went away") {
		t.Errorf("the console died: %s, %v", a, err)
	}
}

// raw is a peer speaking the protocol by hand.
type raw struct {
	c  net.Conn
	rd *bufio.Scanner
}

func dialRaw(t *testing.T, file string) *raw {
	t.Helper()
	path, _ := SocketPath(file)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	sc := bufio.NewScanner(c)
	sc.Buffer(nil, 2*MaxLine)
	return &raw{c: c, rd: sc}
}

func (r *raw) send(t *testing.T, line string) {
	t.Helper()
	if _, err := r.c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

// read returns the next reply, or nil at the connection's end.
func (r *raw) read(t *testing.T) *reply {
	t.Helper()
	if !r.rd.Scan() {
		return nil
	}
	var rep reply
	if err := json.Unmarshal(r.rd.Bytes(), &rep); err != nil {
		t.Fatalf("reply %q: %v", r.rd.Text(), err)
	}
	return &rep
}

// TestHostileAnswerRefused: a peer on the broker's socket cannot answer an
// ask, its own or another's, nor withdraw another's; it is cut.
func TestHostileAnswerRefused(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	events := b.Subscribe(t.Context())
	res := ask(context.Background(), file, call, time.Hour)
	id := next(t, events).Ask.ID

	for _, line := range []string{
		`{"answer":{"id":"` + id + `","answer":"once"}}`,
		`{"ref":1,"answer":"once"}`,
		`{"id":"` + id + `","answer":"once"}`,
	} {
		h := dialRaw(t, file)
		h.send(t, line)
		rep := h.read(t)
		if rep == nil || !strings.Contains(rep.Error, "refused") {
			t.Errorf("%s: reply %+v, want refused", line, rep)
		}
		if rep := h.read(t); rep != nil {
			t.Errorf("%s: the connection goes on: %+v", line, rep)
		}
	}
	// Withdrawing ref 1 withdraws this connection's ref 1 (none), not the
	// other's.
	h := dialRaw(t, file)
	h.send(t, `{"withdraw":1}`)
	h.send(t, `{"ask":{"ref":1,"caller":"x","tool":"t","rule":"r","choices":["once"],"timeoutMs":60000}}`)
	own := next(t, events)
	if own.Ask == nil || own.Ask.Tool != "t" {
		t.Fatalf("event %+v, want the peer's own ask", own)
	}
	if p := b.Pending(); len(p) != 2 {
		t.Errorf("open: %d asks, want 2: the host's is still open", len(p))
	}
	// The answer to the host's ask goes to the host alone.
	if err := b.Answer(id, Once); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, res); r.a != Once || r.err != nil {
		t.Errorf("the host got %s, %v", r.a, r.err)
	}
	if err := b.Answer(own.Ask.ID, Deny); err != nil {
		t.Fatal(err)
	}
	if rep := h.read(t); rep == nil || rep.Ref != 1 || rep.Answer != Deny {
		t.Errorf("the peer's own answer: %+v", rep)
	}
}

func TestBounds(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	events := b.Subscribe(t.Context())

	t.Run("line", func(t *testing.T) {
		h := dialRaw(t, file)
		h.send(t, `{"ask":{"ref":1,"tool":"t","arguments":"`+strings.Repeat("x", MaxLine)+`"}}`)
		if rep := h.read(t); rep == nil || !strings.Contains(rep.Error, "past") {
			t.Errorf("an over-long line: %+v", rep)
		}
		big := call
		big.Arguments = json.RawMessage(`"` + strings.Repeat("x", MaxLine) + `"`)
		if a, err := AskConsole(context.Background(), file, big, time.Hour); a != Deny || !errors.Is(err, ErrNotAnswered) || !strings.Contains(err.Error(), "too large") {
			t.Errorf("Ask of huge arguments: %s, %v", a, err)
		}
	})
	t.Run("per connection", func(t *testing.T) {
		h := dialRaw(t, file)
		for i := 1; i <= maxAsksPerConn+1; i++ {
			b, _ := json.Marshal(request{Ask: &askRequest{Ref: i, Tool: "t", Choices: []Answer{Once}, TimeoutMS: 60000}})
			h.send(t, string(b))
		}
		for range maxAsksPerConn {
			next(t, events)
		}
		if rep := h.read(t); rep == nil || rep.Ref != maxAsksPerConn+1 || !strings.Contains(rep.Refused, "asks open") {
			t.Errorf("one ask past the bound: %+v", rep)
		}
		h.c.Close()
		for range maxAsksPerConn {
			if ev := next(t, events); ev.Expired == "" {
				t.Errorf("event %+v, want expired: the connection closed", ev)
			}
		}
		if p := b.Pending(); len(p) != 0 {
			t.Errorf("%d left open by a closed connection", len(p))
		}
	})
	t.Run("choices", func(t *testing.T) {
		once := call
		once.Choices = []Answer{Once}
		res := ask(context.Background(), file, once, time.Hour)
		id := next(t, events).Ask.ID
		if err := b.Answer(id, Session); err == nil {
			t.Error("a session approval the host does not take was accepted")
		}
		if err := b.Answer(id, "yes"); err == nil {
			t.Error("an unknown answer was accepted")
		}
		if err := b.Answer(id, Deny); err != nil {
			t.Fatal(err)
		}
		if r := wait(t, res); r.a != Deny || r.err != nil {
			t.Errorf("denied: %s, %v", r.a, r.err)
		}
		next(t, events)
	})
	t.Run("bad asks", func(t *testing.T) {
		for _, line := range []string{
			`{"ask":{"ref":0,"tool":"t"}}`,
			`{"ask":{"ref":1}}`,
			`{"ask":{"ref":1,"tool":"t","choices":["deny"]}}`,
			`{"ask":{"ref":1,"tool":"t"},"withdraw":1}`,
			`not json`,
		} {
			h := dialRaw(t, file)
			h.send(t, line)
			if rep := h.read(t); rep == nil || !strings.Contains(rep.Error, "refused") {
				t.Errorf("%s: %+v, want refused", line, rep)
			}
		}
	})
}

// TestSlowSubscriber: a subscriber that does not read loses events; the
// broker and the other subscribers go on.
func TestSlowSubscriber(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	b.Subscribe(t.Context()) // never read
	events := b.Subscribe(t.Context())
	for range subBuffer + 8 {
		res := ask(context.Background(), file, call, time.Hour)
		ev := next(t, events)
		if err := b.Answer(ev.Ask.ID, Once); err != nil {
			t.Fatal(err)
		}
		next(t, events)
		wait(t, res)
	}
}

func TestListenInUseAndModes(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	if _, err := Listen(file); !errors.Is(err, ErrInUse) {
		t.Errorf("a second console: %v, want ErrInUse", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	path, _ := SocketPath(file)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %v, %v; want 0600", fi, err)
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("run directory %v, want 0700", di.Mode().Perm())
	}
	b.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket outlives its console: %v", err)
	}
	b2, err := Listen(file)
	if err != nil {
		t.Fatalf("the next console: %v", err)
	}
	b2.Close()
}

// TestOpenAsksBounded: past maxPending asks open at once, the next is
// refused (its host denies the call) until one ends.
func TestOpenAsksBounded(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	events := b.Subscribe(t.Context())
	var peers []*raw
	for i := 0; i < maxPending; i += maxAsksPerConn {
		h := dialRaw(t, file)
		for ref := 1; ref <= maxAsksPerConn; ref++ {
			line, _ := json.Marshal(request{Ask: &askRequest{Ref: ref, Tool: "t", Choices: []Answer{Once}, TimeoutMS: 60000}})
			h.send(t, string(line))
		}
		for range maxAsksPerConn {
			next(t, events)
		}
		peers = append(peers, h)
	}
	a, err := AskConsole(context.Background(), file, call, time.Hour)
	if a != Deny || !errors.Is(err, ErrNotAnswered) || !strings.Contains(err.Error(), "asks open") {
		t.Errorf("one ask past the bound: %s, %v", a, err)
	}
	peers[0].c.Close()
	for range maxAsksPerConn {
		if ev := next(t, events); ev.Expired == "" {
			t.Fatalf("event %+v, want the closed peer's asks expired", ev)
		}
	}
	res := ask(context.Background(), file, call, time.Hour)
	if err := b.Answer(next(t, events).Ask.ID, Once); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, res); r.a != Once {
		t.Errorf("once there is room: %s, %v", r.a, r.err)
	}
}

// TestHostileConsole: what a process on the broker's socket answers is
// taken only when it is an approval the host offered; anything else
// denies.
func TestHostileConsole(t *testing.T) {
	file := composition(t)
	path, _ := SocketPath(file)
	os.MkdirAll(filepath.Dir(path), 0o700)
	for _, c := range []struct{ reply, why string }{
		{`{"ref":1,"answer":"always"}`, "not offered"},
		{`{"ref":1,"answer":"yes"}`, "not offered"},
		{`not json`, "the console's answer"},
		{`{"ref":1,"answer":"` + strings.Repeat("x", 100<<10) + `"}`, "token too long"},
		{`{"error":"no"}`, "the console: no"},
	} {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			bufio.NewReader(conn).ReadString('\n')
			conn.Write([]byte(c.reply + "\n"))
			io.Copy(io.Discard, conn)
		}()
		once := call
		once.Choices = []Answer{Once}
		a, err := AskConsole(context.Background(), file, once, time.Hour)
		if a != Deny || !errors.Is(err, ErrNotAnswered) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("the console answers %.40s: %s, %v; want deny, %s", c.reply, a, err, c.why)
		}
		l.Close()
		<-done
	}
}

// TestConnectionsBounded: past maxConns connections open at once, the
// next is closed, and its host denies the call.
func TestConnectionsBounded(t *testing.T) {
	file := composition(t)
	b := listen(t, file)
	events := b.Subscribe(t.Context())
	for range maxConns {
		h := dialRaw(t, file)
		h.send(t, `{"ask":{"ref":1,"tool":"t","choices":["once"],"timeoutMs":60000}}`)
		next(t, events)
	}
	a, err := AskConsole(context.Background(), file, call, time.Hour)
	if a != Deny || !errors.Is(err, ErrNotAnswered) {
		t.Errorf("one connection past the bound: %s, %v", a, err)
	}
}
