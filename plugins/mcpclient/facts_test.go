package mcpclient_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// TestStatusTransportAndReconnects: the instance status carries the
// entry's transport and counts the reconnects since the run started, so
// that a front end shows them without parsing the detail.
func TestStatusTransportAndReconnects(t *testing.T) {
	hs := newHarness(t)
	starts := filepath.Join(t.TempDir(), "starts")
	hs.apply(stdioFixture(t, "tr", "tr", nil, "-starts-file", starts))
	hs.requireActive("tr")
	if st := hs.status("tr"); st.Transport != mcpclient.TransportStdio || st.Reconnects != 0 {
		t.Fatalf("connected: Transport %q, Reconnects %d; want stdio and 0", st.Transport, st.Reconnects)
	}
	// The server dies under the client: one reconnect, counted.
	killLastStart(t, starts)
	eventually(t, "a second start", func() bool { return countLinesIn(t, starts) == 2 })
	eventually(t, "reconnects 1, connected again", func() bool {
		st := hs.status("tr")
		return st.Reconnects == 1 && st.LastError == ""
	})
	if st := hs.status("tr"); st.Transport != mcpclient.TransportStdio {
		t.Errorf("after a reconnect: Transport %q", st.Transport)
	}
}

// killLastStart kills the fixture process the last line of its
// -starts-file names ("start PID").
func killLastStart(t *testing.T, starts string) {
	t.Helper()
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	pid, err := strconv.Atoi(strings.TrimPrefix(lines[len(lines)-1], "start "))
	if err != nil {
		t.Fatalf("starts file %q: %v", b, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}
