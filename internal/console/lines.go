package console

// The console's input: one source of lines shared by the command loop and
// the questions asked while a command runs.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
)

// lineSource hands the console's input lines out: to a question being
// asked (an elicitation) first, then to the command loop.
type lineSource struct {
	mu      sync.Mutex
	queue   []string
	ended   bool
	full    bool          // feed waits for the queue to drain
	asking  int           // questions waiting for a line
	waiting int           // callers of next waiting for a line
	changed chan struct{} // closed and replaced at every change
}

// maxQueuedLines is how many lines are read ahead of the command loop;
// past it feed stops reading, so that pasted or piped input waits in its
// pipe rather than in memory.
const maxQueuedLines = 64

func newLineSource() *lineSource { return &lineSource{changed: make(chan struct{})} }

// feed reads in until its end (or stop), queueing its lines, at most
// maxQueuedLines at a time.
func (s *lineSource) feed(in io.Reader, stop <-chan struct{}) {
	sc := newLineScanner(in)
	for sc.Scan() {
		s.mu.Lock()
		for len(s.queue) >= maxQueuedLines {
			s.full = true
			ch := s.changed
			s.mu.Unlock()
			select {
			case <-stop:
				return
			case <-ch:
			}
			s.mu.Lock()
		}
		s.full = false
		s.queue = append(s.queue, sc.Text())
		s.signal()
		s.mu.Unlock()
		select {
		case <-stop:
			return
		default:
		}
	}
	s.mu.Lock()
	s.ended = true
	s.signal()
	s.mu.Unlock()
}

// signal wakes every waiter; s.mu is held.
func (s *lineSource) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// next returns the next line, for a question (ask) or the command loop;
// false when the input ended or ctx is done. The loop gets no line while a
// question waits for one.
func (s *lineSource) next(ctx context.Context, ask bool) (string, bool) {
	s.mu.Lock()
	if ask {
		s.asking++
	}
	// Once, not at each wake: two waiters would wake each other forever.
	s.waiting++
	s.signal() // pull reads an entry for it
	defer func() {
		s.mu.Lock()
		if ask {
			s.asking--
		}
		s.waiting--
		s.signal()
		s.mu.Unlock()
	}()
	for {
		if len(s.queue) > 0 && (ask || s.asking == 0) {
			line := s.queue[0]
			s.queue = s.queue[1:]
			s.signal() // feed may wait for room
			s.mu.Unlock()
			return line, true
		}
		if s.ended && len(s.queue) == 0 {
			s.mu.Unlock()
			return "", false
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return "", false
		case <-ch:
		}
		s.mu.Lock()
	}
}

// pull reads entries with read (a line editor) one at a time, each when
// a caller of next waits and none is queued, until read fails or stop.
// A Ctrl-C at the editor's prompt goes to interrupt.
func (s *lineSource) pull(read func() (string, error), interrupt func(), stop <-chan struct{}) {
	for {
		s.mu.Lock()
		for s.waiting == 0 || len(s.queue) > 0 {
			ch := s.changed
			s.mu.Unlock()
			select {
			case <-stop:
				return
			case <-ch:
			}
			s.mu.Lock()
		}
		s.mu.Unlock()
		line, err := read()
		if errors.Is(err, ErrInterrupt) {
			if interrupt != nil {
				interrupt()
			}
			continue
		}
		s.mu.Lock()
		if err != nil {
			s.ended = true
		} else {
			s.queue = append(s.queue, line)
		}
		s.signal()
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// dropTypeAhead drops the lines read but not yet taken, and returns how
// many. A question calls it when it starts: lines typed before it was
// shown were meant for the command loop (or nothing), not as its answer.
func (s *lineSource) dropTypeAhead() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.queue)
	if n > 0 {
		s.queue = nil
		s.signal()
	}
	return n
}

// newLineScanner scans lines of up to 1 MiB.
func newLineScanner(in io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return sc
}

// lockedWriter serializes writes: the console's replies and the questions
// asked from a server's request share one output.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
