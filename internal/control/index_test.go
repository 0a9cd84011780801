package control

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
)

// runtimeDir sets XDG_RUNTIME_DIR to a new directory, where the index of
// running hosts goes.
func runtimeDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dshx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("XDG_RUNTIME_DIR", dir)
	return dir
}

// serveGreeter serves a host of file under the current DSH_HOME until the
// returned stop.
func serveGreeter(t *testing.T, file string) (stop func()) {
	t.Helper()
	ctx := context.Background()
	h := host.New(&host.Options{Logger: quiet})
	c, err := host.ReadComposition(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	l, err := Listen(file, quiet)
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(l, &app.Local{Host: h, File: file}, file, quiet)
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			srv.Close()
			h.Shutdown(ctx)
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestIndexFindsAHostUnderAnotherHome: a command whose DSH_HOME is not the
// host's reaches it through the index of running hosts, and knows the
// host's DSH_HOME; once the host stops, its entry is gone and none is
// found (issue 44: status started a second copy of every server).
func TestIndexFindsAHostUnderAnotherHome(t *testing.T) {
	runtimeDir(t)
	homeA := shortHome(t)
	file := writeFile(t, filepath.Join(t.TempDir(), "composition.yml"), "plugins:\n  - {id: hi, name: greeter}\n")
	stop := serveGreeter(t, file)
	shortHome(t) // B
	ctx := context.Background()
	c, err := Dial(ctx, file)
	if err != nil {
		t.Fatalf("under another DSH_HOME: %v", err)
	}
	if c.PID != os.Getpid() || c.OtherHome() != homeA {
		t.Errorf("hello %+v, other home %q; want this process under %s", c.Hello, c.OtherHome(), homeA)
	}
	st, err := c.Status(ctx)
	if err != nil || host.Find(st.Instances, "hi").State != host.StateActive {
		t.Errorf("status through the index: %+v, %v", st, err)
	}
	c.Close()
	stop()
	if _, err := Dial(ctx, file); !errors.Is(err, ErrNoHost) {
		t.Errorf("after the host stopped: %v, want ErrNoHost", err)
	}
	if links, _ := filepath.Glob(filepath.Join(indexDir(), "*")); len(links) != 0 {
		t.Errorf("index entries left: %v", links)
	}
	// Under its own DSH_HOME a host says nothing of another.
	t.Setenv("DSH_HOME", homeA)
	serveGreeter(t, file)
	if c, err := Dial(ctx, file); err != nil || c.OtherHome() != "" {
		t.Errorf("own home: %v, other home %q", err, c.OtherHome())
	}
}

// TestIndexUntrusted: an index directory that is a symlink, another's or
// open to others is not used, and an entry whose host died leads nowhere:
// each time Dial says no host runs.
func TestIndexUntrusted(t *testing.T) {
	ctx := context.Background()
	file := writeFile(t, filepath.Join(t.TempDir(), "composition.yml"), "plugins:\n  - {id: hi, name: greeter}\n")
	for name, spoil := range map[string]func(t *testing.T, index string){
		"a symlink": func(t *testing.T, index string) {
			real := filepath.Join(filepath.Dir(index), "real")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, index); err != nil {
				t.Fatal(err)
			}
		},
		"open to others": func(t *testing.T, index string) {
			if err := os.Mkdir(index, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(index, 0o700) })
		},
	} {
		t.Run(name, func(t *testing.T) {
			index := filepath.Join(runtimeDir(t), "dsh-host")
			spoil(t, index)
			shortHome(t)
			serveGreeter(t, file)
			// opened after the host published: publishing makes it private
			if name == "open to others" {
				if err := os.Chmod(index, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			shortHome(t)
			if c, err := Dial(ctx, file); !errors.Is(err, ErrNoHost) {
				t.Errorf("Dial = %+v, %v; want ErrNoHost", c, err)
			}
		})
	}
	t.Run("a dead host's entry", func(t *testing.T) {
		runtimeDir(t)
		homeA := shortHome(t)
		stop := serveGreeter(t, file)
		link, _ := indexLink(file)
		to, err := os.Readlink(link)
		if err != nil || filepath.Dir(to) != filepath.Join(homeA, "run") {
			t.Fatalf("entry %s -> %s, %v", link, to, err)
		}
		stop()
		// as a host killed leaves it: the link, and a socket nobody answers
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		shortHome(t)
		if c, err := Dial(ctx, file); !errors.Is(err, ErrNoHost) {
			t.Errorf("Dial = %+v, %v; want ErrNoHost", c, err)
		}
	})
}
