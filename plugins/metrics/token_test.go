package metrics_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/host"
)

// TestTokenLengthAsTheGateways: beyond loopback, a metrics entry takes a
// token exactly when a gateway entry on the same kind of address takes
// it, from a variable and from a file alike: one minimum, not 32 bytes
// for a scrape and 16 for the MCP endpoint, which ran tools.
func TestTokenLengthAsTheGateways(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{1, bearer.MinStaticLen - 1, bearer.MinStaticLen, 2 * bearer.MinStaticLen} {
		token := strings.Repeat("Z", n)
		t.Setenv("DSH_TEST_METRICS_LEN", token)
		gw := gateway.Config{HTTP: "0.0.0.0:8931", TokenEnv: "DSH_TEST_METRICS_LEN"}
		_, gwErr := gw.Token()
		file := filepath.Join(dir, fmt.Sprint(n))
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for key, config := range map[string]string{
			"tokenEnv":  "tokenEnv: DSH_TEST_METRICS_LEN",
			"tokenFile": fmt.Sprintf("tokenFile: %q", file),
		} {
			h := newHost(t, io.Discard)
			err := apply(t, h, "plugins:\n  - {id: m, name: metrics, config: {listen: \"0.0.0.0:0\", "+config+"}}\n")
			st := host.Find(h.Status(), "m")
			served := st.State == host.StateActive
			if served != (gwErr == nil) {
				t.Errorf("a %d-byte token in %s: the metrics entry is %s (%v, %s), the gateway's check says %v; want both to take it or both to refuse it",
					n, key, st.State, err, st.Err, gwErr)
			}
			if !served && (!strings.Contains(st.Err, key+": ") || !strings.Contains(st.Err, fmt.Sprintf("at least %d", bearer.MinStaticLen)) || strings.Contains(st.Err, token)) {
				t.Errorf("a %d-byte token in %s refused with %q; want it to name %s and the minimum, not the token", n, key, st.Err, key)
			}
		}
		if want := n >= bearer.MinStaticLen; (gwErr == nil) != want {
			t.Errorf("a %d-byte token: the gateway's check says %v", n, gwErr)
		}
	}
}
