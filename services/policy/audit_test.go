package policy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host/hosttest"
	_ "github.com/dsh-host/dsh-host/plugins/greeter"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/tools"
)

// readTrail returns every line of the trail in dir, each decoded; a line
// that is not one whole record fails the test.
func readTrail(t *testing.T, dir string) []policy.Record {
	t.Helper()
	files, err := policy.AuditFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []policy.Record
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r policy.Record
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("%s: torn or foreign line %q: %v", name, sc.Text(), err)
			}
			out = append(out, r)
		}
		f.Close()
	}
	return out
}

// TestAuditParallelCalls: 1,000 calls at once, with the file rotated
// meanwhile, leave 1,000 whole lines; arguments are hashed, not written.
func TestAuditParallelCalls(t *testing.T) {
	dir := t.TempDir()
	h := hosttest.Start(t, fmt.Sprintf(`plugins:
  - id: greeter
    name: greeter
  - id: policy
    name: policy
    config:
      rules:
        - tools: [greet]
          when: 'args.name == "Mallory"'
          action: deny
      audit: {dir: %q, maxSize: 20000, keep: 1000}
`, dir))
	reg := h.Tools()
	const calls = 1000
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			name := "Ada" + strconv.Itoa(i)
			if i%10 == 0 {
				name = "Mallory"
			}
			reg.Execute(t.Context(), tools.Caller{Kind: tools.CallerGateway, ID: "gw"}, "greet", []byte(`{"name":"`+name+`"}`))
		})
	}
	wg.Wait()
	recs := readTrail(t, dir)
	if len(recs) != calls {
		t.Fatalf("%d lines, want %d", len(recs), calls)
	}
	files, _ := policy.AuditFiles(dir)
	if len(files) < 2 {
		t.Errorf("the trail was never rotated: %v", files)
	}
	var denied int
	for _, r := range recs {
		if r.Args != nil {
			t.Fatalf("a line carries the arguments without audit.arguments: %+v", r)
		}
		if r.Tool != "greet" || r.Caller.Kind != "gateway" || r.Caller.ID != "gw" || len(r.ArgsSHA256) != 64 || r.ArgsSize == 0 {
			t.Fatalf("line %+v", r)
		}
		switch {
		case r.Decision == "deny" && r.Outcome == "refused" && strings.HasPrefix(r.Rule, "rule 1 (composition.yml:"):
			denied++
		case r.Decision == "allow" && r.Rule == "default" && r.Outcome == "ok" && r.ResultSize > 0:
		default:
			t.Fatalf("line %+v", r)
		}
	}
	if denied != calls/10 {
		t.Errorf("%d denied lines, want %d", denied, calls/10)
	}
}

// TestAuditArgumentsWhenAsked: audit.arguments writes the values.
func TestAuditArgumentsWhenAsked(t *testing.T) {
	dir := t.TempDir()
	h := hosttest.Start(t, fmt.Sprintf(`plugins:
  - {id: greeter, name: greeter}
  - {id: policy, name: policy, config: {audit: {dir: %q, arguments: true}}}
`, dir))
	h.Call("greet", `{"name":"Ada"}`)
	recs := readTrail(t, dir)
	if len(recs) != 1 || string(recs[0].Args) != `{"name":"Ada"}` {
		t.Fatalf("trail %+v, want one line with the arguments", recs)
	}
}

// helperEnv makes the test binary an audit writer (TestAuditTwoProcesses).
const helperEnv = "DSH_POLICY_AUDIT_HELPER"

func TestAuditHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("run by TestAuditTwoProcesses")
	}
	log, err := policy.OpenAudit(dir, 8192, 10000)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i := range 2000 {
		if err := log.Write(&policy.Record{Time: time.Now(), Tool: "t" + strconv.Itoa(os.Getpid()), ArgsSize: i, Outcome: "ok"}); err != nil {
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
	recs := readTrail(t, dir)
	perWriter := map[string]int{}
	for _, r := range recs {
		perWriter[r.Tool]++
	}
	if len(recs) != 4000 || len(perWriter) != 2 {
		t.Fatalf("%d lines from %v, want 2000 from each of 2 processes", len(recs), perWriter)
	}
}
