package toolset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatalogReadCapped: a cache file past the cap is refused before it
// is decoded, even when it would decode; one under it is read.
func TestCatalogReadCapped(t *testing.T) {
	b, err := encodeCatalog("fx", nil, nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCatalog(small); err != nil {
		t.Fatalf("a small catalog: %v", err)
	}
	// Valid JSON, padded with white space past the cap.
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, append(b, bytes.Repeat([]byte(" "), maxCatalogBytes)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCatalog(big); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Fatalf("a catalog past the cap: %v, want an error naming the cap", err)
	}
}
