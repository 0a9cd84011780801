//go:build linux

// Package ptytest opens a pseudo-terminal for a test: a program reads
// and writes its terminal side as it would a person's terminal, the test
// types keys on the other side and reads what was shown.
package ptytest

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// PTY is a pseudo-terminal: the program under test reads and writes its
// terminal side (Pts); the test types on Ptmx and reads what was shown.
type PTY struct {
	Ptmx, Pts *os.File

	mu   sync.Mutex
	out  bytes.Buffer
	more chan struct{}
	done chan struct{}
}

func Open(t testing.TB) *PTY {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no pseudo-terminals: %v", err)
		}
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	// Through Control, not Fd: Fd would put ptmx in blocking mode, and a
	// read blocked in the kernel is not woken by Close.
	rc, err := ptmx.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if cerr := rc.Control(func(fd uintptr) {
		if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err == nil {
			n, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	}); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &PTY{Ptmx: ptmx, Pts: pts, more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			close(p.more)
			p.more = make(chan struct{})
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		pts.Close()
		ptmx.Close()
		<-p.done
	})
	return p
}

// WaitShown waits until the terminal has shown s n times in all: the
// editor's n-th prompt, say. Bounded: a test that never sees it fails.
func (p *PTY) WaitShown(t testing.TB, s string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		got, more := strings.Count(p.out.String(), s), p.more
		p.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-more:
		case <-deadline:
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("the terminal never showed %q %d times; it shows:\n%q", s, n, p.out.String())
		}
	}
}

// Shown is everything the terminal has shown so far.
func (p *PTY) Shown() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Type writes keys to the terminal, as typed.
func (p *PTY) Type(t testing.TB, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := p.Ptmx.WriteString(k); err != nil {
			t.Fatal(err)
		}
	}
}
