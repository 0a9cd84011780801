package attachments

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const crashEnv = "DSH_ATTACHMENTS_CRASH_DIR"

// crashBatch is the batch the crashing writer never finishes: three new
// images, the second file's rename never happens.
func crashBatch(t testing.TB) []Image {
	return []Image{
		{MediaType: PNG, Data: makePNG(t, 3, 3)},
		{MediaType: JPEG, Data: makeJPEG(t, 3, 3)},
		{MediaType: WebP, Data: tinyWebP},
	}
}

// TestHelperCrashingWriter is the writer TestKilledWriter kills: it stops
// for good just before the second file of its batch becomes visible. It
// does nothing in a normal test run.
func TestHelperCrashingWriter(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	s, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.hook = func(stage string, n int) error {
		if stage == "rename" && n == 2 {
			fmt.Println("stuck")
			select {} // until killed
		}
		return nil
	}
	_, err = s.SaveImages(context.Background(), crashBatch(t))
	t.Fatalf("SaveImages returned %v; it should never return", err)
}

// TestKilledWriter kills a writer in the middle of a batch (SIGKILL: no
// rollback runs) and checks that the batch is undone by the next writer of
// a store already open, and by a new Store, without touching anything
// that was there before.
func TestKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	dir := t.TempDir()
	s, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := crashBatch(t)
	old := []Image{{MediaType: GIF, Data: makeGIF(t, 2, 2)}}
	if _, err := s.SaveImages(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	before := listing(t, dir)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperCrashingWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "stuck\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	cmd.Process.Kill()
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("child: %v", err)
	}

	// The dead writer's first image is complete on disk, its journal too.
	if _, err := os.Stat(s.objectPath(idOf(batch[0].Data)[7:])); err != nil {
		t.Fatalf("the crash happened before the first file: %v", err)
	}
	// A store opened before the crash undoes the batch before its next
	// one, then saves that same image for real.
	refs, err := s.SaveImages(context.Background(), batch[:1])
	if err != nil {
		t.Fatal(err)
	}
	want := listing(t, dir)
	for _, r := range batch[1:] {
		if _, err := s.Stat(idOf(r.Data)); !errors.Is(err, ErrNotFound) {
			t.Errorf("an image of the dead batch is visible: %v", err)
		}
	}
	if _, err := s.Stat(refs[0].ID); err != nil {
		t.Errorf("the image saved after the crash is gone: %v", err)
	}
	noTempFiles(t, dir)
	// The store now holds exactly what it held before, plus that image.
	delete(want, "sha256/"+refs[0].ID[7:9]+"/"+refs[0].ID[7:])
	delete(want, "sha256/"+refs[0].ID[7:9]+"/")
	if before["sha256/"+refs[0].ID[7:9]+"/"] != "" {
		want["sha256/"+refs[0].ID[7:9]+"/"] = "dir"
	}
	if diff := cmp.Diff(before, want); diff != "" {
		t.Errorf("after recovery (-before +after, less the new image):\n%s", diff)
	}
}

// TestNewRecovers lays out what a writer that died mid-batch leaves (a
// journal, a complete file it names, a shard it created, a temporary file,
// the journal's own temporary file) and opens a new Store: all of it goes,
// and nothing else.
func TestNewRecovers(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	keep := makeGIF(t, 1, 2)
	if _, err := s.SaveImages(context.Background(), []Image{{MediaType: GIF, Data: keep}}); err != nil {
		t.Fatal(err)
	}
	before := listing(t, dir)

	done, half := makePNG(t, 9, 9), makeJPEG(t, 9, 9)
	dh, hh := idOf(done)[7:], idOf(half)[7:]
	for _, p := range []string{filepath.Dir(s.objectPath(dh)), filepath.Dir(s.objectPath(hh))} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, b []byte) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(s.objectPath(dh), done)
	write(filepath.Join(filepath.Dir(s.objectPath(hh)), tempPrefix+"42"), half[:10])
	j := fmt.Sprintf(`{"objects":[%q,%q],"dirs":[%q,%q]}`, dh, hh, dh[:2], hh[:2])
	write(filepath.Join(dir, journalPrefix+"X.json"), []byte(j))
	write(filepath.Join(dir, "."+journalPrefix+"Y.json.tmp-7"), []byte("{"))

	if _, err := New(dir, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, listing(t, dir)); diff != "" {
		t.Errorf("New did not undo the unfinished batch (-before +after):\n%s", diff)
	}
}

func TestDamagedJournal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, journalPrefix+"Z.json"), []byte(`{"objects":["../../etc/passwd"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir, nil); err == nil || !strings.Contains(err.Error(), "remove the journal by hand") {
		t.Errorf("New = %v, want a refusal of the journal", err)
	}
}
