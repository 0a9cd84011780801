package metrics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	_ "github.com/dsh-host/dsh-host/plugins/metrics"
	_ "github.com/dsh-host/dsh-host/services/tools"
)

// newHost is a host with the process's registry (as run's and serve's
// have), logging into log.
func newHost(t testing.TB, log io.Writer) *host.Host {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	h := host.New(&host.Options{Logger: slog.New(slog.NewTextHandler(log, nil)), Metrics: telemetry.NewRegistry()})
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	return h
}

func apply(t testing.TB, h *host.Host, yml string) error {
	t.Helper()
	c, err := host.ParseComposition("metrics.yml", []byte(yml), nil)
	if err != nil {
		return err
	}
	return h.Update(context.Background(), c)
}

func scrape(t testing.TB, url string) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricsURL is the URL an entry's status detail names.
func metricsURL(t testing.TB, h *host.Host, id string) string {
	t.Helper()
	st := host.Find(h.Status(), id)
	_, url, ok := strings.Cut(st.Detail, "metrics at ")
	if st.State != host.StateActive || !ok {
		t.Fatalf("%s not serving metrics: %+v", id, h.Status())
	}
	return url
}

// TestServesMetrics: a metrics entry serves the host's metrics until it
// is removed; a non-loopback address is served with a warning.
func TestServesMetrics(t *testing.T) {
	log := &mcptest.SyncBuffer{}
	h := newHost(t, log)
	if err := apply(t, h, "plugins:\n  - {id: m, name: metrics, config: {listen: \"127.0.0.1:0\"}}\n"); err != nil {
		t.Fatal(err)
	}
	url := metricsURL(t, h, "m")
	if code, body := scrape(t, url); code != 200 || !strings.Contains(body, "dsh_build_info") {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	if strings.Contains(log.String(), "reachable beyond this machine") {
		t.Errorf("a loopback listener warned:\n%s", log)
	}
	if err := apply(t, h, "plugins: []\n"); err != nil {
		t.Fatal(err)
	}
	if code, _ := scrape(t, url); code != 0 {
		t.Errorf("GET %s after the entry went: %d, want no listener", url, code)
	}

	if err := apply(t, h, "plugins:\n  - {id: m, name: metrics, config: {listen: \"0.0.0.0:0\"}}\n"); err != nil {
		t.Fatal(err)
	}
	metricsURL(t, h, "m")
	if !strings.Contains(log.String(), "reachable beyond this machine") {
		t.Errorf("a listener on every interface did not warn:\n%s", log)
	}
}

// TestGatewayKeyStartsTheSameListener: a gateway entry's metrics key
// serves the same metrics, on the same listener's code (its log line).
func TestGatewayKeyStartsTheSameListener(t *testing.T) {
	log := &mcptest.SyncBuffer{}
	h := newHost(t, log)
	if err := apply(t, h, "plugins:\n  - {id: gw, name: gateway, config: {metrics: \"127.0.0.1:0\"}}\n"); err != nil {
		t.Fatal(err)
	}
	url := metricsURL(t, h, "gw")
	if code, body := scrape(t, url); code != 200 || !strings.Contains(body, "dsh_build_info") {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	if n := strings.Count(log.String(), "metrics listening"); n != 1 {
		t.Errorf("%d metrics listeners started, want 1:\n%s", n, log)
	}
}

// TestOneListenerPerHost: a composition that would serve the host's
// metrics twice (a metrics entry and a gateway's metrics key, or two
// metrics entries) is refused before anything starts, naming both.
func TestOneListenerPerHost(t *testing.T) {
	for name, yml := range map[string]string{
		"entry and gateway key": "plugins:\n  - {id: m, name: metrics, config: {listen: \"127.0.0.1:0\"}}\n  - {id: gw, name: gateway, config: {metrics: \"127.0.0.1:0\"}}\n",
		"two entries":           "plugins:\n  - {id: m, name: metrics, config: {listen: \"127.0.0.1:0\"}}\n  - {id: m2, name: metrics, config: {listen: \"127.0.0.1:0\"}}\n",
		"two gateways":          "plugins:\n  - {id: gw, name: gateway, config: {metrics: \"127.0.0.1:0\"}}\n  - {id: gw2, name: gateway, config: {metrics: \"127.0.0.1:0\"}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			h := newHost(t, io.Discard)
			err := apply(t, h, yml)
			if err == nil || !strings.Contains(err.Error(), "metrics listener") || !strings.Contains(err.Error(), "already claimed by entry") {
				t.Fatalf("Update = %v, want a refusal naming the metrics listener's two entries", err)
			}
			if st := h.Status(); len(st) > 0 {
				for _, s := range st {
					if s.State == host.StateActive && (s.ID == "m" || s.ID == "gw") {
						t.Errorf("%s started: %+v", s.ID, s)
					}
				}
			}
		})
	}
	// A disabled one leaves the other its listener.
	h := newHost(t, io.Discard)
	if err := apply(t, h, "plugins:\n  - {id: m, name: metrics, disabled: true, config: {listen: \"127.0.0.1:0\"}}\n  - {id: gw, name: gateway, config: {metrics: \"127.0.0.1:0\"}}\n"); err != nil {
		t.Fatal(err)
	}
	metricsURL(t, h, "gw")
}

// TestConfigErrors: a bad listen key is named; a host given no registry
// serves the one it made.
func TestConfigErrors(t *testing.T) {
	for yml, want := range map[string]string{
		"plugins:\n  - {id: m, name: metrics}\n":                                  "listen: required",
		"plugins:\n  - {id: m, name: metrics, config: {listen: \"127.0.0.1\"}}\n": "want HOST:PORT",
		"plugins:\n  - {id: m, name: metrics, config: {port: 9464}}\n":            "port",
	} {
		err := apply(t, newHost(t, io.Discard), yml)
		var ke *host.KeyError
		if err == nil || !strings.Contains(err.Error(), want) || (want != "port" && !errors.As(err, &ke)) {
			t.Errorf("%q: %v, want an error saying %q", yml, err, want)
		}
	}
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	defer h.Shutdown(context.Background())
	apply(t, h, "plugins:\n  - {id: m, name: metrics, config: {listen: \"127.0.0.1:0\"}}\n")
	if st := host.Find(h.Status(), "m"); st.State != host.StateActive {
		t.Errorf("a host given no registry: %+v", st)
	}
}
