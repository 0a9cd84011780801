package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestAttachRefused: with the running host's control socket full (64
// idle connections), call and reload say that the running host refused
// them, and why, and exit 1: call does not start a copy of the
// composition, and reload does not claim that no host runs. Once a place
// is free, call attaches again.
func TestAttachRefused(t *testing.T) {
	home := attachHome(t)
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(greeterComposition), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, _ := startHostIn(t, home, file)
	t.Setenv("DSH_HOME", home)
	sock, err := control.SocketPath(file)
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 64 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		// A request answered: the connection is kept, idle, for a minute.
		c.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprint(c, "GET /v1/hello HTTP/1.1\r\nHost: dsh\r\n\r\n")
		if _, err := c.Read(make([]byte, 512)); err != nil {
			t.Fatalf("connection %d: %v", len(held), err)
		}
		held = append(held, c)
	}
	why := fmt.Sprintf("the running host (pid %d) has 64 connections open on its control socket, the most it takes", cmd.Process.Pid)

	code, stdout, stderr := cliIn(t, home, "call", "-c", file, "greet", `{"name":"Ada"}`)
	if code != exitFail || stdout != "" || !strings.Contains(stderr, "dsh-host call: "+file+": the running host refused the connection: "+why) ||
		!strings.Contains(stderr, "--no-attach") || strings.Contains(stderr, "starting") {
		t.Errorf("call with the socket full: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = cliIn(t, home, "reload", "-c", file)
	if code != exitFail || !strings.Contains(stderr, "dsh-host reload: "+file+": the running host refused the connection: "+why) || strings.Contains(stderr, "no dsh-host run or serve is running") {
		t.Errorf("reload with the socket full: exit %d, stderr:\n%s", code, stderr)
	}

	held[0].Close()
	held = held[1:]
	// The host frees the place once it reads the close.
	mcptest.WaitFor(t, time.Minute, "call attached with a place free", func() bool {
		code, stdout, stderr = cliIn(t, home, "call", "-c", file, "greet", `{"name":"Ada"}`)
		return code == exitOK && strings.Contains(stderr, attachedTo(cmd)) && stdout != ""
	})
}
