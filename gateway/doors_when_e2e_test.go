package gateway

import "testing"

// TestE2EOneGateWhenFails: with inbound OAuth, a deny rule over the
// caller whose `when` fails for a token without groups
// (caller.groups[0]) closes sx's every door to that token, as it denies
// its calls, instead of opening them; a token whose groups decide the
// rule (admins) reaches them all.
func TestE2EOneGateWhenFails(t *testing.T) {
	checkOAuthDoors(t, `        - servers: [sx]
          when: 'caller.groups[0] != "admins"'
          action: deny
`, doorsCaller{"carol", nil, doors{}}, doorsCaller{"alice", []string{"admins"}, allOpen})
}
