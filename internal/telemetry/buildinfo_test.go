package telemetry

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/version"
)

// TestBuildInfo: /metrics carries dsh_build_info 1 with the version, commit
// and Go version internal/version reports, the same the gateway's
// serverInfo and the traces' service.version say.
func TestBuildInfo(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(NewRegistry()).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	bi := version.Get()
	want := `dsh_build_info{commit="` + bi.Commit + `",goversion="` + bi.GoVersion + `",version="` + bi.Version + `"} 1`
	if !strings.Contains(rec.Body.String(), want+"\n") {
		t.Errorf("/metrics lacks %s; it has:\n%s", want, grepLines(rec.Body.String(), "dsh_build"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
