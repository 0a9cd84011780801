package audit_test

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/policy/audit"
)

// BenchmarkAuditWrite is one audit line, encoded and appended.
func BenchmarkAuditWrite(b *testing.B) {
	log, err := audit.Open(b.TempDir(), 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	rec := &audit.Record{Caller: audit.Caller{Kind: "chat"}, Tool: "mcp__github__create_issue", Server: "github",
		ArgsSHA256: strings.Repeat("ab", 32), ArgsSize: 40, Decision: "allow", Rule: "rule 100 (composition.yml:300)", Outcome: "ok"}
	b.ReportAllocs()
	for b.Loop() {
		if err := log.Write(rec); err != nil {
			b.Fatal(err)
		}
	}
}
