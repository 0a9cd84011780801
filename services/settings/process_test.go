package settings

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// counter is the section each writer increments.
type counter struct {
	N     int    `yaml:"n"`
	Seen  []int  `yaml:"seen,flow,omitempty"`
	Owner string `yaml:"owner,omitempty"`
}

const helperEnv = "DSH_SETTINGS_HELPER"

// TestHelperProcess is the second writer of TestTwoProcesses, run as a child
// process; it does nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process only")
	}
	var path, section string
	var n int
	if _, err := fmt.Sscanf(spec, "%s %s %d", &path, &section, &n); err != nil {
		t.Fatal(err)
	}
	st, err := Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// Tell the parent we are ready, then start when it says so, so that
	// both writers run at the same time.
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := hammer(st, section, n); err != nil {
		t.Fatal(err)
	}
}

// hammer increments section n times and the shared section with it.
func hammer(st *Store, section string, n int) error {
	for i := range n {
		if err := Update(st, section, func(c *counter) error {
			c.N++
			c.Seen = append(c.Seen, i)
			c.Owner = section
			return nil
		}); err != nil {
			return err
		}
		if err := Update(st, "shared", func(c *counter) error { c.N++; return nil }); err != nil {
			return err
		}
	}
	return nil
}

func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	const n = 100
	st := openAt(t, "# two writers\nshared:\n  n: 0 # both add here\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s child %d", helperEnv, st.Path(), n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out []byte
	var wg sync.WaitGroup
	readyc := make(chan error, 1)
	wg.Go(func() {
		r := bufio.NewReader(stdout)
		line, err := r.ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("child said %q", line)
		}
		readyc <- err
		out, _ = io.ReadAll(r)
	})
	if err := <-readyc; err != nil {
		cmd.Process.Kill()
		wg.Wait()
		cmd.Wait()
		t.Fatal(err)
	}
	io.WriteString(stdin, "go\n")
	parentErr := hammer(st, "parent", n)
	wg.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if parentErr != nil {
		t.Fatal(parentErr)
	}
	for _, sec := range []string{"parent", "child"} {
		c, ok, err := Read[counter](st, sec)
		if err != nil || !ok {
			t.Fatal(sec, ok, err)
		}
		if c.N != n || len(c.Seen) != n || c.Owner != sec {
			t.Errorf("%s: n=%d, %d seen, owner %q; want %d updates", sec, c.N, len(c.Seen), c.Owner, n)
		}
		for i, v := range c.Seen {
			if v != i {
				t.Errorf("%s: update %d recorded as %d", sec, i, v)
				break
			}
		}
	}
	shared, _, err := Read[counter](st, "shared")
	if err != nil || shared.N != 2*n {
		t.Errorf("shared: n=%d (%v), want %d", shared.N, err, 2*n)
	}
	if got := readFile(t, st); got[:len("# two writers\nshared:\n  n: ")] != "# two writers\nshared:\n  n: " {
		t.Errorf("header lost:\n%s", got)
	}
	t.Logf("final file:\n%s", strconv.Quote(readFile(t, st)[:60]))
}

// TestConcurrentUpdatesInProcess runs writers on two Stores of one file
// (as two plugins might) and on one Store shared by goroutines.
func TestConcurrentUpdatesInProcess(t *testing.T) {
	st := openAt(t, "# shared\n")
	other, err := Open(st.Path(), discard)
	if err != nil {
		t.Fatal(err)
	}
	const n = 25
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i, s := range []*Store{st, st, other, other} {
		wg.Go(func() {
			sec := fmt.Sprintf("w%d", i)
			for range n {
				if err := Update(s, sec, func(c *counter) error { c.N++; return nil }); err != nil {
					errs <- err
					return
				}
				if err := Update(s, "all", func(c *counter) error { c.N++; return nil }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range 4 {
		if c, _, err := Read[counter](st, fmt.Sprintf("w%d", i)); err != nil || c.N != n {
			t.Errorf("w%d: %d (%v), want %d", i, c.N, err, n)
		}
	}
	if c, _, err := Read[counter](st, "all"); err != nil || c.N != 4*n {
		t.Errorf("all: %d (%v), want %d", c.N, err, 4*n)
	}
}
