package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/services/policy/audit"
)

// TestFollowRefusesAnEndlessLine: following a trail whose current file is
// one line with no end stops with an error at the bound, instead of
// holding the line in memory as it grows.
func TestFollowRefusesAnEndlessLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, audit.File), []byte(strings.Repeat("x", auditLineMax+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	seq, err := (&Local{}).Audit(ctx, AuditQuery{Dir: dir, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range seq {
		if err == nil || !strings.Contains(err.Error(), "longer than 4 MiB") {
			t.Fatalf("got %v, want the line refused", err)
		}
		return
	}
	t.Fatal("the follow ended without refusing the line")
}
