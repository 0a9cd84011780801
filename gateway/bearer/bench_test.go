package bearer

import (
	"net/http"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
)

// BenchmarkAuth measures the check of one request's token: a token
// verified before, and one not (signature, claims, identity); the
// issuer's key is cached either way. The gateway's BenchmarkAuth measures
// calls per second with auth off and on.
func BenchmarkAuth(b *testing.B) {
	const aud = "http://127.0.0.1:1/mcp"
	setup := func(b *testing.B) (*Verifier, *http.Request) {
		as := oauthtest.Start(b, oauthtest.Options{JWT: true, Resource: aud})
		v := New(Config{Issuer: as.Issuer, Audience: aud}, Options{})
		b.Cleanup(func() { v.Close() })
		req, _ := http.NewRequest(http.MethodPost, aud, nil)
		req.Header.Set("Authorization", "Bearer "+as.Sign(as.Claims("alice", []string{"admins"}, "mcp")))
		return v, req
	}
	b.Run("verify/remembered-token", func(b *testing.B) {
		v, req := setup(b)
		if _, e := v.Authenticate(req); e != nil {
			b.Fatal(e)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, e := v.Authenticate(req); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("verify/new-token-cached-key", func(b *testing.B) {
		v, req := setup(b)
		b.ReportAllocs()
		for b.Loop() {
			v.verified = verifiedCache{}
			if _, e := v.Authenticate(req); e != nil {
				b.Fatal(e)
			}
		}
	})
}
