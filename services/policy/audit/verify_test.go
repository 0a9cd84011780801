package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/services/policy/audit"
)

// tamperTrail writes a trail of n lines in dir, rotated every few lines,
// and returns its files, oldest first.
func tamperTrail(t *testing.T, dir string, n int) []string {
	t.Helper()
	log, err := audit.Open(dir, 1500, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := log.Write(&audit.Record{Time: time.Unix(int64(i), 0).UTC(), Tool: "tool" + strconv.Itoa(i), Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	files, err := audit.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("%d files, want at least 5", len(files))
	}
	if _, err := audit.Verify(dir); err != nil {
		t.Fatalf("the untouched trail: %v", err)
	}
	return files
}

func fileLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t *testing.T, path string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAuditVerifyCatchesTampering: a flipped byte, cut lines, a line
// removed, a dropped file (rotated, the oldest, the current one) or a
// dropped state file each fail verify, naming the first line, or the
// file, that does not follow.
func TestAuditVerifyCatchesTampering(t *testing.T) {
	base := func(p string) string { return filepath.Base(p) }
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, dir string, files []string) (file string, line int)
	}{
		{"flip a byte in a rotated file", func(t *testing.T, dir string, files []string) (string, int) {
			lines := fileLines(t, files[1])
			lines[1] = bytes.Replace(lines[1], []byte(`"tool":"tool`), []byte(`"tool":"Tool`), 1)
			writeLines(t, files[1], lines)
			return base(files[1]), 3
		}},
		{"flip a byte of the last line", func(t *testing.T, dir string, files []string) (string, int) {
			last := files[len(files)-1]
			lines := fileLines(t, last)
			lines[len(lines)-1] = bytes.Replace(lines[len(lines)-1], []byte(`"outcome":"ok"`), []byte(`"outcome":"OK"`), 1)
			writeLines(t, last, lines)
			return base(last), len(lines)
		}},
		{"flip a byte of a prev hash", func(t *testing.T, dir string, files []string) (string, int) {
			lines := fileLines(t, files[2])
			i := bytes.Index(lines[0], []byte(`"prev":"`)) + len(`"prev":"`)
			lines[0][i] ^= 1
			writeLines(t, files[2], lines)
			return base(files[2]), 1
		}},
		{"cut the last lines", func(t *testing.T, dir string, files []string) (string, int) {
			last := files[len(files)-1]
			lines := fileLines(t, last)
			writeLines(t, last, lines[:len(lines)-2])
			return base(last), len(lines) - 2
		}},
		{"cut the last lines, then write on", func(t *testing.T, dir string, files []string) (string, int) {
			last := files[len(files)-1]
			lines := fileLines(t, last)
			writeLines(t, last, lines[:len(lines)-2])
			log, err := audit.Open(dir, 1<<20, 1000)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			if err := log.Write(&audit.Record{Tool: "after", Outcome: "ok"}); err != nil {
				t.Fatal(err)
			}
			return base(last), len(lines) - 1
		}},
		{"remove a line", func(t *testing.T, dir string, files []string) (string, int) {
			lines := fileLines(t, files[1])
			writeLines(t, files[1], append(lines[:2:2], lines[3:]...))
			return base(files[1]), 3
		}},
		{"delete a rotated file", func(t *testing.T, dir string, files []string) (string, int) {
			os.Remove(files[2])
			return base(files[3]), 1
		}},
		{"delete the oldest file", func(t *testing.T, dir string, files []string) (string, int) {
			os.Remove(files[0])
			return base(files[0]), 0
		}},
		{"delete the current file", func(t *testing.T, dir string, files []string) (string, int) {
			os.Remove(files[len(files)-1])
			prev := files[len(files)-2]
			return base(prev), len(fileLines(t, prev))
		}},
		{"append a line that carries the last one's hash", func(t *testing.T, dir string, files []string) (string, int) {
			last := files[len(files)-1]
			lines := fileLines(t, last)
			sum := sha256.Sum256(bytes.TrimRight(lines[len(lines)-1], "\n"))
			forged := []byte(`{"tool":"forged","outcome":"ok","prev":"` + hex.EncodeToString(sum[:]) + `"}` + "\n")
			writeLines(t, last, append(lines, forged))
			return base(last), len(lines) + 1
		}},
		{"spoil the state file's latest slot", func(t *testing.T, dir string, files []string) (string, int) {
			// The other slot holds the state of one line before: the
			// last line no longer has the state's word for it.
			state := filepath.Join(dir, audit.StateFile)
			b, err := os.ReadFile(state)
			if err != nil {
				t.Fatal(err)
			}
			// The slots are 512 bytes each; the latest has the higher seq.
			seq := func(slot []byte) int {
				var n int
				fmt.Sscanf(string(slot[bytes.Index(slot, []byte(`"seq":`))+len(`"seq":`):]), "%d", &n)
				return n
			}
			latest := 0
			if seq(b[512:]) > seq(b[:512]) {
				latest = 512
			}
			b[latest+bytes.Index(b[latest:], []byte(`"hash":"`))+len(`"hash":"`)] ^= 1
			os.WriteFile(state, b, 0o600)
			last := files[len(files)-1]
			return base(last), len(fileLines(t, last))
		}},
		{"overwrite the state file", func(t *testing.T, dir string, files []string) (string, int) {
			os.WriteFile(filepath.Join(dir, audit.StateFile), []byte(`{"version":1,"hash":""}`), 0o600)
			return audit.StateFile, 0
		}},
		{"delete the state file", func(t *testing.T, dir string, files []string) (string, int) {
			os.Remove(filepath.Join(dir, audit.StateFile))
			return audit.StateFile, 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := tamperTrail(t, dir, 60)
			if got := fileLines(t, files[len(files)-1]); len(got) < 3 {
				t.Fatalf("the current file has %d lines, want at least 3", len(got))
			}
			wantFile, wantLine := tc.tamper(t, dir, files)
			_, err := audit.Verify(dir)
			var brk *audit.Break
			if !errors.As(err, &brk) {
				t.Fatalf("verify: %v, want a break at %s:%d", err, wantFile, wantLine)
			}
			if brk.File != wantFile || brk.Line != wantLine {
				t.Errorf("verify: %v, want it at %s:%d", err, wantFile, wantLine)
			}
		})
	}
}

// TestAuditVerifyAfterKeep: rotated files that keep removes are not a
// gap: the chain starts at the oldest file left.
func TestAuditVerifyAfterKeep(t *testing.T) {
	dir := t.TempDir()
	log, err := audit.Open(dir, 1500, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := log.Write(&audit.Record{Tool: "tool" + strconv.Itoa(i), Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	files, _ := audit.Files(dir)
	check, err := audit.Verify(dir)
	if err != nil || len(files) != 3 || check.Files != 3 {
		t.Fatalf("verify: %+v, %v over %d files; want 3 files that verify", check, err, len(files))
	}
}

// TestAuditChainsOnFromOldTrail: lines written before the chain (no
// prev) start the trail; the chain goes on from them and verifies,
// counting them apart.
func TestAuditChainsOnFromOldTrail(t *testing.T) {
	dir := t.TempDir()
	old := `{"time":"2026-01-01T00:00:00Z","caller":{"kind":"chat"},"tool":"a","argsSha256":"","argsSize":0,"outcome":"ok","durationMs":0,"resultSize":0}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, audit.File), []byte(old+old), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := log.Write(&audit.Record{Tool: "b", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	check, err := audit.Verify(dir)
	if err != nil || check.Lines != 5 || check.Unchained != 2 {
		t.Fatalf("verify: %+v, %v; want 5 lines, 2 of them before the chain", check, err)
	}
	// A line without prev after the chain began is not one of them.
	f, _ := os.OpenFile(filepath.Join(dir, audit.File), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(old)
	f.Close()
	var brk *audit.Break
	if _, err := audit.Verify(dir); !errors.As(err, &brk) || brk.Line != 6 {
		t.Fatalf("verify with a line put in: %v, want a break at line 6", err)
	}
}

// TestAuditVerifyWhileWriting: a check while lines are appended and files
// rotated sees the trail as it was at one moment, and finds it whole.
func TestAuditVerifyWhileWriting(t *testing.T) {
	dir := t.TempDir()
	log, err := audit.Open(dir, 4000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	done := make(chan error, 1)
	go func() {
		for i := range 1000 {
			if err := log.Write(&audit.Record{Tool: "tool" + strconv.Itoa(i), Outcome: "ok"}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for checks := 0; ; checks++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if check, err := audit.Verify(dir); err != nil || check.Lines != 1000 {
				t.Fatalf("after the writes: %+v, %v", check, err)
			}
			t.Logf("%d checks while writing", checks)
			return
		default:
		}
		if _, err := audit.Verify(dir); err != nil {
			t.Fatalf("check %d while writing: %v", checks, err)
		}
	}
}
