package attachments

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteRefusesSymlinkedShard: a shard directory planted as a symlink
// to a directory outside the store is refused on write, and the batch
// saves nothing, neither outside nor in the store; reads refuse it too.
func TestWriteRefusesSymlinkedShard(t *testing.T) {
	s := newStore(t, nil)
	good, planted := makePNG(t, 2, 3), makePNG(t, 3, 2)
	goodShard := strings.TrimPrefix(idOf(good), "sha256:")[:2]
	shard := strings.TrimPrefix(idOf(planted), "sha256:")[:2]
	if shard == goodShard {
		t.Fatal("the two test images share a shard; pick others")
	}
	outside := t.TempDir()
	link := filepath.Join(s.Dir(), objectsDir, shard)
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	before := listing(t, s.Dir())

	// The good image first: it is written before the planted one is
	// reached only if the check came late, and must be rolled back then.
	_, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: good}, {MediaType: PNG, Data: planted}})
	if err == nil {
		t.Fatal("SaveImages through a symlinked shard succeeded")
	}
	for _, want := range []string{link, "is a symlink", "nothing saved"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if got := listing(t, outside); len(got) != 1 { // the root itself
		t.Errorf("files written outside the store: %v", got)
	}
	if diff := cmp.Diff(before, listing(t, s.Dir())); diff != "" {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
	if _, err := s.Stat(idOf(planted)); err == nil {
		t.Error("Stat of the planted shard's image succeeded")
	}

	// Once the link is removed, the same batch saves.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: good}, {MediaType: PNG, Data: planted}}); err != nil {
		t.Fatalf("SaveImages after the link went: %v", err)
	}
}

// TestWriteRefusesSymlinkedObjectsDir: the same for the directory that
// holds the shards.
func TestWriteRefusesSymlinkedObjectsDir(t *testing.T) {
	s := newStore(t, nil)
	objs := filepath.Join(s.Dir(), objectsDir)
	if err := os.Remove(objs); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, objs); err != nil {
		t.Fatal(err)
	}
	_, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: makePNG(t, 1, 1)}})
	if err == nil || !strings.Contains(err.Error(), objs+" is a symlink") {
		t.Fatalf("SaveImages = %v, want a refusal naming %s as a symlink", err, objs)
	}
	if got := listing(t, outside); len(got) != 1 {
		t.Errorf("files written outside the store: %v", got)
	}
}

// TestWriteRefusesSymlinkedShardHoldingTheImage: a planted shard that
// already holds a file of the image's name and size is refused too; the
// save would otherwise report an image the store's reads refuse.
func TestWriteRefusesSymlinkedShardHoldingTheImage(t *testing.T) {
	s := newStore(t, nil)
	img := makePNG(t, 2, 3)
	hex := strings.TrimPrefix(idOf(img), "sha256:")
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(s.Dir(), objectsDir, hex[:2])); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.objectPath(hex), img, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: img}})
	if err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Fatalf("SaveImages = %v, want a refusal of the symlinked shard", err)
	}
}
