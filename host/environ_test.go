package host

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// hasVar reports whether env sets name.
func hasVar(env []string, name string) bool {
	return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// TestEnvironLeavesSecretsOut: a variable an enabled entry names as secret
// is left out of every instance's Environ, from the update that adds the
// entry; disabling the entry lets it through again.
func TestEnvironLeavesSecretsOut(t *testing.T) {
	t.Setenv("TEST_GW_BEARER", "token-value")
	h := newHost(t, nil)
	apply(t, h, "plugins:\n  - {id: gw, name: test-secretive, config: {tokenEnv: TEST_GW_BEARER}}\n  - {id: a, name: test-noop}\n")
	a := scopes(h)["a"]
	if env := a.Environ(); hasVar(env, "TEST_GW_BEARER") || !hasVar(env, "PATH") {
		t.Errorf("Environ with the secret's entry enabled: TEST_GW_BEARER %v, PATH %v", hasVar(env, "TEST_GW_BEARER"), hasVar(env, "PATH"))
	}
	apply(t, h, "plugins:\n  - {id: gw, name: test-secretive, disabled: true, config: {tokenEnv: TEST_GW_BEARER}}\n  - {id: a, name: test-noop}\n")
	if scopes(h)["a"] != a {
		t.Fatal("an unchanged entry was restarted")
	}
	if !hasVar(a.Environ(), "TEST_GW_BEARER") {
		t.Error("a variable no enabled entry names is still left out")
	}

	// A scope of no host passes the process's environment.
	s := NewScope(context.Background(), "alone", nil)
	defer s.Dispose(0)
	if !hasVar(s.Environ(), "TEST_GW_BEARER") {
		t.Error("NewScope's Environ left a variable out")
	}
}
