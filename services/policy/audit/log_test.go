package audit_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/policy/policytest"
)

// helperEnv makes the test binary an audit writer (TestAuditTwoProcesses).
const helperEnv = "DSH_POLICY_AUDIT_HELPER"

func TestAuditHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("run by TestAuditTwoProcesses")
	}
	log, err := audit.Open(dir, 8192, 10000)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i := range 2000 {
		if err := log.Write(&audit.Record{Time: time.Now(), Tool: "t" + strconv.Itoa(os.Getpid()), ArgsSize: i, Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuditTwoProcesses: two processes appending to one trail, rotating
// it by size as they go, lose no line and tear none.
func TestAuditTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAuditHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	recs := policytest.ReadTrail(t, dir)
	perWriter := map[string]int{}
	for _, r := range recs {
		perWriter[r.Tool]++
	}
	if len(recs) != 4000 || len(perWriter) != 2 {
		t.Fatalf("%d lines from %v, want 2000 from each of 2 processes", len(recs), perWriter)
	}
}
