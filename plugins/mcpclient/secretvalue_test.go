package mcpclient

import "testing"

// A password net/url cannot parse (a bad escape, #, space, ^) or a URL
// with no host (a socket DSN) still marks the value as a secret.
func TestScrubDropsUnparseableURLPasswords(t *testing.T) {
	for _, kv := range []string{
		"DB1=postgres://u:p%zz@db/app", "DB2=postgres://u:pa#ss@db/app", "DB3=mysql://u:p w@db/app",
		"DB4=postgres://u:p^w@db/app", "DB5=postgres://u:pw@/app?host=/run/pg", "DB6=amqp://u:p/w@mq/",
	} {
		if got := childEnv([]string{kv}, nil, InheritScrub); len(got) != 0 {
			t.Errorf("scrub passed %q", got)
		}
	}
	keep := []string{"ODD=https://ex ample.com/a", "PKG=https://registry.example.com/@scope/pkg"}
	if got := childEnv(keep, nil, InheritScrub); len(got) != len(keep) {
		t.Errorf("scrub kept %q of %q", got, keep)
	}
}
