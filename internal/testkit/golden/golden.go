// Package golden compares what a test printed with a file under testdata/,
// and rewrites the file instead when the test runs with -update. Each test
// package declares the flag (a package-level flag here would be state of
// every binary that links it):
//
//	var update = flag.Bool("update", false, "rewrite the golden files in testdata/")
//	golden.Check(t, "console_help", out, *update)
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Check compares got with testdata/NAME.golden; with update it writes got
// there instead. A difference fails t, showing both in full (%q, so that
// escape sequences and trailing spaces are visible).
func Check(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update if the change is meant)\ngot:\n%q\nwant:\n%q", file, got, want)
	}
}
