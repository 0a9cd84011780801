package gateway

import (
	"fmt"
	"testing"

	"github.com/dsh-host/dsh-host/internal/oauthtest"
)

// TestE2EOneGateWhenFails: with inbound OAuth, a deny rule over the
// caller whose `when` fails for a token without groups
// (caller.groups[0]) closes sx's every door to that token, as it denies
// its calls, instead of opening them; a token whose groups decide the
// rule (admins) reaches them all.
func TestE2EOneGateWhenFails(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	addr := freeLoopbackAddr(t)
	gwURL := "http://" + addr + "/mcp"
	as := oauthtest.Start(t, oauthtest.Options{JWT: true, Resource: gwURL})
	writeFile(t, e.composition, doorsComposition(e, `        - servers: [sx]
          when: 'caller.groups[0] != "admins"'
          action: deny
`, fmt.Sprintf(`  - id: gateway
    name: gateway
    config:
      http: %q
      auth:
        issuer: %q
        audience: %q
`, addr, as.Issuer, gwURL)))
	e.serveHTTPProc(t, bin, nil)
	for _, who := range []struct {
		name   string
		groups []string
		want   doors
	}{{"carol", nil, doors{}}, {"alice", []string{"admins"}, allOpen}} {
		t.Run(who.name, func(t *testing.T) {
			cs := doorsClient(t, gwURL, as.Sign(as.Claims(who.name, who.groups)))
			if got := reach(t, cs); got != who.want {
				t.Errorf("%s reaches of sx:\n got %+v\nwant %+v", who.name, got, who.want)
			}
		})
	}
}
