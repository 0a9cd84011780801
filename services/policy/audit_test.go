package policy_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
	_ "github.com/dsh-host/dsh-host/plugins/greeter"
	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/policy/policytest"
	"github.com/dsh-host/dsh-host/services/tools"
)

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
	recs := policytest.ReadTrail(t, dir)
	if len(recs) != calls {
		t.Fatalf("%d lines, want %d", len(recs), calls)
	}
	files, _ := audit.Files(dir)
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
	recs := policytest.ReadTrail(t, dir)
	if len(recs) != 1 || string(recs[0].Args) != `{"name":"Ada"}` {
		t.Fatalf("trail %+v, want one line with the arguments", recs)
	}
}
