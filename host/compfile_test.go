package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// noopYAML is a composition of one test-noop entry a greeting greeting.
func noopYAML(greeting string) string {
	return fmt.Sprintf("plugins:\n  - {id: a, name: test-noop, config: {greeting: %s}}\n", greeting)
}

// watchSettled waits for the read Watch makes once it watches the files
// its first load found (a link's target, an include's directory): an
// edit made before it would be read by it, not by the watch under test.
func watchSettled(t *testing.T, h *Host) {
	t.Helper()
	waitReloads(t, h, func(r ReloadStats) bool { return r.Skipped == 1 })
}

// symlink makes link point at target, replacing what link was the way
// `ln -sfn` does: a new link renamed over the old.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".new"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// TestWatchFollowsSymlinkedComposition: with composition.yml a relative
// link into a dotfiles directory, edits made at the target apply (in
// place and by rename), and so does re-pointing the link, after which the
// new target's edits apply.
func TestWatchFollowsSymlinkedComposition(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"home", "dotfiles", "other"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(root, "dotfiles", "real.yml")
	writeFile(t, real, noopYAML("v1"))
	link := filepath.Join(root, "home", "composition.yml")
	symlink(t, "../dotfiles/real.yml", link)
	h := newHost(t, nil)
	watch(t, h, link)
	watchSettled(t, h)
	if got := rec.take(); !cmp.Equal(got, []string{"apply a v1"}) {
		t.Fatalf("first load: %q", got)
	}

	other := filepath.Join(root, "other", "next.yml")
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"edit the target in place", func() { writeFile(t, real, noopYAML("v2")) }, "v2"},
		{"save the target by rename", func() {
			writeFile(t, real+".swp", noopYAML("v3"))
			if err := os.Rename(real+".swp", real); err != nil {
				t.Fatal(err)
			}
		}, "v3"},
		{"re-point the link into another directory", func() {
			writeFile(t, other, noopYAML("v4"))
			symlink(t, other, link)
		}, "v4"},
		{"edit the new target", func() { writeFile(t, other, noopYAML("v5")) }, "v5"},
	}
	for i, st := range steps {
		st.do()
		waitReloads(t, h, func(r ReloadStats) bool { return r.Applied == i+2 })
		if diff := cmp.Diff([]string{"dispose a", "apply a " + st.want}, rec.take()); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", st.name, diff)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a link: %v", err)
	}
}

// TestWatchFollowsSymlinkedInclude: an included file that is a link is
// followed to its target too.
func TestWatchFollowsSymlinkedInclude(t *testing.T) {
	root := t.TempDir()
	inc := filepath.Join(root, "composition.d")
	shared := filepath.Join(root, "shared")
	for _, d := range []string{inc, shared} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(shared, "b.yml")
	writeFile(t, target, "plugins:\n  - {id: b, name: test-noop, config: {greeting: v1}}\n")
	if err := os.Symlink(target, filepath.Join(inc, "b.yml")); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(root, "composition.yml")
	writeFile(t, main, "include: [composition.d/*.yml]\nplugins: []\n")
	h := newHost(t, nil)
	watch(t, h, main)
	watchSettled(t, h)
	rec.take()

	writeFile(t, target, "plugins:\n  - {id: b, name: test-noop, config: {greeting: v2}}\n")
	waitReloads(t, h, func(r ReloadStats) bool { return r.Applied == 2 })
	if diff := cmp.Diff([]string{"dispose b", "apply b v2"}, rec.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestWatchPermissionChange: a chmod alone makes the watch read the file
// (a read of unchanged content is skipped). A file that could not be read
// applies once a chmod makes it readable; that part needs a user the
// permissions apply to, so not root.
func TestWatchPermissionChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, noopYAML("v1"))
	h := newHost(t, nil)
	watch(t, h, path)
	rec.take()

	skipped := h.Reloads().Skipped
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	waitReloads(t, h, func(r ReloadStats) bool { return r.Skipped > skipped })
	if r := h.Reloads(); r.Applied != 1 || r.Failed != 0 {
		t.Errorf("after a chmod of unchanged content: %+v, want a skipped read only", r)
	}

	if os.Geteuid() == 0 {
		t.Log("running as root, which reads any file: the unreadable part is not run")
		return
	}
	// Saved unreadable (by rename, as an editor with the wrong umask or
	// a sync tool may), then made readable.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(noopYAML("v2")), 0o000); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitReloads(t, h, func(r ReloadStats) bool { return r.Failed == 1 })
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	waitReloads(t, h, func(r ReloadStats) bool { return r.Applied == 2 })
	if diff := cmp.Diff([]string{"dispose a", "apply a v2"}, rec.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// sparseFile makes a file of size bytes that takes no disk space.
func sparseFile(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// TestCompositionSizeCap: a file over MaxCompositionSize, main or
// included, is refused with an error naming it and the cap, without being
// read (a 1 GiB file answers at once); one at the cap is read. A device
// without a size is read no further than the cap.
func TestCompositionSizeCap(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yml")
	sparseFile(t, huge, 1<<30)
	const capMsg = "more than the 4194304 bytes (4 MiB) a composition file may hold"
	_, err := ReadComposition(huge, nil)
	if err == nil || !strings.Contains(err.Error(), huge+": 1073741824 bytes, "+capMsg) {
		t.Errorf("a 1 GiB main file: %v", err)
	}

	atCap := filepath.Join(dir, "at-cap.yml")
	head := "plugins: []\n#"
	writeFile(t, atCap, head+strings.Repeat("x", MaxCompositionSize-len(head)-1)+"\n")
	if _, err := ReadComposition(atCap, nil); err != nil {
		t.Errorf("a file of exactly the cap: %v", err)
	}

	main := filepath.Join(dir, "composition.yml")
	writeFile(t, main, "include: [huge.yml]\nplugins: []\n")
	if _, err := ReadComposition(main, nil); err == nil || !strings.Contains(err.Error(), huge+": 1073741824 bytes, "+capMsg) {
		t.Errorf("a 1 GiB included file: %v", err)
	}

	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := ParseComposition(main, []byte("include: [/dev/zero]\nplugins: []\n"), nil)
		if err == nil || !strings.Contains(err.Error(), "/dev/zero is not a regular file (a device)") {
			t.Errorf("an included device: %v", err)
		}
		// The main file is what the user named, a pipe perhaps: read,
		// but capped.
		if _, err := ReadComposition("/dev/zero", nil); err == nil || !strings.Contains(err.Error(), "/dev/zero: "+capMsg) {
			t.Errorf("an endless device as the main file: %v", err)
		}
	}
	big := []byte("plugins: []\n" + strings.Repeat("#", MaxCompositionSize))
	if _, err := ParseComposition(main, big, nil); err == nil || !strings.Contains(err.Error(), capMsg) {
		t.Errorf("data over the cap: %v", err)
	}
}

// TestWatchRefusesOversizedComposition: a save that makes the file larger
// than the cap changes nothing, and says why.
func TestWatchRefusesOversizedComposition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, noopYAML("v1"))
	h := newHost(t, nil)
	watch(t, h, path)
	rec.take()
	before := scopes(h)

	tmp := path + ".tmp"
	sparseFile(t, tmp, MaxCompositionSize+1)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitReloads(t, h, func(r ReloadStats) bool { return r.Failed == 1 })
	if err := h.Reloads().LastError; err == nil || !strings.Contains(err.Error(), path+": 4194305 bytes, more than the 4194304 bytes (4 MiB)") {
		t.Errorf("last error: %v", err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("events: %q, want none", got)
	}
	if after := scopes(h); after["a"] != before["a"] {
		t.Error("instance a was restarted")
	}
}
