package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startUI starts `dsh-host ui --no-open` with DSH_HOME home and returns
// the lines it printed up to its URL, and the URL. It is stopped with
// SIGINT when the test ends, and must exit 0.
func startUI(t *testing.T, home string, args ...string) (said, url string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"ui", "--no-open"}, args...)...)
	cmd.Env = append(os.Environ(), "DSH_HOME="+home, "BROWSER=/bin/false")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("dsh-host ui after SIGINT: %v; want exit 0", err)
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-done
			t.Error("dsh-host ui did not stop within a minute of SIGINT; killed")
		}
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	var b strings.Builder
	timeout := time.After(time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("dsh-host ui ended before printing its URL:\n%s", b.String())
			}
			b.WriteString(l + "\n")
			if u, found := strings.CutPrefix(strings.TrimSpace(l), "http://"); found {
				go func() {
					for range lines {
					}
				}()
				return b.String(), "http://" + u
			}
		case <-timeout:
			t.Fatalf("no URL within a minute:\n%s", b.String())
		}
	}
}

// signIn opens url (with the token) and returns a client holding the
// session cookie, and the console's origin.
func signIn(t *testing.T, url string) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.RawQuery != "" {
		t.Fatalf("signing in: %s at %s; want 200 without the token", resp.Status, resp.Request.URL)
	}
	return c, url[:strings.Index(url, "/?")]
}

func page(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s\n%s", u, resp.Status, b)
	}
	return string(b)
}

// TestUIRunsOrAttaches: with no host running, dsh-host ui starts the
// composition itself; with `run` running, it attaches to that host and
// starts nothing.
func TestUIRunsOrAttaches(t *testing.T) {
	file := writeComposition(t, fixtureComposition(t, "dsh-ui-test"))
	t.Run("alone", func(t *testing.T) {
		home := attachHome(t)
		said, url := startUI(t, home, "-c", file)
		if !strings.Contains(said, "starting it in this process") {
			t.Errorf("dsh-host ui said\n%s\nwant that it starts the composition", said)
		}
		c, base := signIn(t, url)
		if body := page(t, c, base+"/servers"); !strings.Contains(body, "<b>demo</b>") {
			t.Errorf("the servers page lacks demo:\n%s", body)
		}
	})
	t.Run("attached", func(t *testing.T) {
		home := attachHome(t)
		run, _ := startHostIn(t, home, file)
		said, url := startUI(t, home, "-c", file)
		if !strings.Contains(said, "attached to the running host") {
			t.Errorf("dsh-host ui said\n%s\nwant that it attached", said)
		}
		c, base := signIn(t, url)
		if body := page(t, c, base+"/servers"); !strings.Contains(body, "host pid "+strconv.Itoa(run.Process.Pid)) {
			t.Errorf("the servers page is not the running host's (pid %d):\n%s", run.Process.Pid, body)
		}
		if body := page(t, c, base+"/composition"); !strings.Contains(body, "mcp-client") {
			t.Errorf("the composition page lacks the file:\n%s", body)
		}
	})
}

// TestUIAddressRefused: a non-loopback address is a usage error of ui,
// run --ui and serve --ui, before anything starts.
func TestUIAddressRefused(t *testing.T) {
	file := writeComposition(t, "plugins: []\n")
	for _, args := range [][]string{
		{"ui", "--no-open", "--addr", "0.0.0.0:0", "-c", file},
		{"run", "--console", "off", "--ui", "0.0.0.0:0", "-c", file},
		{"serve", "--stdio", "--ui", "192.0.2.1:80", "-c", file},
	} {
		code, _, stderr := dshHost(t, args...)
		if code == 0 || !strings.Contains(stderr, "loopback") {
			t.Errorf("%v: exit %d, stderr\n%s\nwant a refusal naming loopback", args, code, stderr)
		}
	}
}
