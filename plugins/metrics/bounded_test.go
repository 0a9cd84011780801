package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/services/tools"
)

const wait = 30 * time.Second

// served is a host running fixture servers under mcp-client, a gateway
// on loopback HTTP and the metrics entry metricsConfig.
type served struct {
	h          *host.Host
	mcpURL     string
	metricsURL string
	hc         *http.Client
}

// fixtureEntry is an mcp-client entry id running the fixture as server
// name, with args.
func fixtureEntry(t *testing.T, id, name string, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("  - id: %s\n    name: mcp-client\n    config: {serverName: %s, transport: stdio, command: %q, args: [%s]}\n",
		id, name, mcptest.FixtureBinary(t), strings.Join(quoted, ", "))
}

func startServed(t *testing.T, metricsConfig string, fixtures ...string) *served {
	t.Helper()
	h := newHost(t, io.Discard)
	s := &served{h: h, hc: &http.Client{Transport: &http.Transport{}, Timeout: wait}}
	t.Cleanup(s.hc.CloseIdleConnections)
	s.apply(t, metricsConfig, fixtures...)
	st := host.Find(h.Status(), "gw")
	s.mcpURL = st.Detail
	if st.State != host.StateActive || !strings.HasPrefix(s.mcpURL, "http://") {
		t.Fatalf("the gateway does not serve: %+v", h.Status())
	}
	s.metricsURL = metricsURL(t, h, "m")
	return s
}

// apply makes the composition the gateway, the metrics entry and
// fixtures (fixtureEntry's).
func (s *served) apply(t *testing.T, metricsConfig string, fixtures ...string) {
	t.Helper()
	yml := "plugins:\n  - {id: gw, name: gateway, config: {http: \"127.0.0.1:0\"}}\n" +
		"  - {id: m, name: metrics, config: {listen: \"127.0.0.1:0\"" + metricsConfig + "}}\n" + strings.Join(fixtures, "")
	if err := apply(t, s.h, yml); err != nil {
		t.Fatal(err)
	}
}

func (s *served) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: s.mcpURL, HTTPClient: s.hc}, nil)
}

func call(t *testing.T, cs *mcp.ClientSession, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, name := range names {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
	}
}

// labels returns the label sets of family's series in a scrape over
// HTTP, each as "k=v,k=v" (sorted, the entry label left out), sorted.
func (s *served) labels(t *testing.T, family string) []string {
	t.Helper()
	code, body := scrape(t, s.metricsURL)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", s.metricsURL, code, body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	var out []string
	for _, m := range fams[family].GetMetric() {
		var kv []string
		for _, l := range m.GetLabel() {
			if l.GetName() != host.EntryLabel {
				kv = append(kv, l.GetName()+"="+l.GetValue())
			}
		}
		slices.Sort(kv)
		out = append(out, strings.Join(kv, ","))
	}
	slices.Sort(out)
	return out
}

// eventually scrapes until ok holds of the scrapes' labels, failing the
// test with what the last scrape had after wait.
func (s *served) eventually(t *testing.T, what string, ok func(labels func(family string) []string) bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if ok(func(family string) []string { return s.labels(t, family) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after %v", what, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestToolLabelOptions: the tool calls' series, scraped over HTTP from a
// host whose gateway client called the fixture's tools, are labelled by
// tool (the default), by server only (toolLabel: none), or by tool for
// the first toolLabelLimit tools called and "other" for the rest.
func TestToolLabelOptions(t *testing.T) {
	for _, c := range []struct {
		name, config string
		want         []string
	}{
		{"default", "", []string{
			"outcome=ok,server=fx,tool=mcp__fx__env", "outcome=ok,server=fx,tool=mcp__fx__greet", "outcome=ok,server=fx,tool=mcp__fx__ping",
		}},
		{"name", ", toolLabel: name", []string{
			"outcome=ok,server=fx,tool=mcp__fx__env", "outcome=ok,server=fx,tool=mcp__fx__greet", "outcome=ok,server=fx,tool=mcp__fx__ping",
		}},
		{"none", ", toolLabel: none", []string{"outcome=ok,server=fx,tool="}},
		{"limit", ", toolLabelLimit: 2", []string{
			"outcome=ok,server=fx,tool=mcp__fx__env", "outcome=ok,server=fx,tool=mcp__fx__ping", "outcome=ok,server=fx,tool=other",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServed(t, c.config, fixtureEntry(t, "fixture", "fx"))
			call(t, s.connect(t), "mcp__fx__ping", "mcp__fx__env", "mcp__fx__greet", "mcp__fx__ping")
			for _, family := range []string{"dsh_tool_calls_total", "dsh_tool_call_duration_seconds"} {
				if diff := cmp.Diff(c.want, s.labels(t, family)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", family, diff)
				}
			}
		})
	}
}

// TestToolLabelLimitFreesPlaces: a tool that left the registry frees its
// place under the limit for the next tool called; the tools counted as
// other stay there.
func TestToolLabelLimitFreesPlaces(t *testing.T) {
	s := startServed(t, ", toolLabelLimit: 1", fixtureEntry(t, "fixture", "fx", "-remove-tool"))
	cs := s.connect(t)
	call(t, cs, "mcp__fx__ping", "mcp__fx__env")
	if diff := cmp.Diff([]string{"outcome=ok,server=fx,tool=mcp__fx__ping", "outcome=ok,server=fx,tool=other"}, s.labels(t, "dsh_tool_calls_total")); diff != "" {
		t.Fatalf("before (-want +got):\n%s", diff)
	}
	removeTool(t, s, cs, "ping")
	s.eventually(t, "ping's series go", func(labels func(string) []string) bool {
		return !slices.Contains(labels("dsh_tool_calls_total"), "outcome=ok,server=fx,tool=mcp__fx__ping")
	})
	call(t, cs, "mcp__fx__greet")
	if diff := cmp.Diff([]string{"outcome=ok,server=fx,tool=mcp__fx__greet", "outcome=ok,server=fx,tool=other"}, s.labels(t, "dsh_tool_calls_total")); diff != "" {
		t.Errorf("after ping went (-want +got):\n%s", diff)
	}
}

// removeTool has the fixture remove its tool name (list_changed), and
// waits until the host's registry no longer has it.
func removeTool(t *testing.T, s *served, cs *mcp.ClientSession, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__remove-tool", Arguments: map[string]any{"name": name}}); err != nil {
		t.Fatal(err)
	}
	reg, _ := host.Lookup(s.h, tools.Key)
	for {
		if _, ok := reg.Get("mcp__fx__" + name); !ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("mcp__fx__%s is still registered after the server removed it", name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestSeriesGoWithTheirTool: a tool the server drops (tools/list_changed)
// takes its series with it while the server's other tools keep their
// counts (the list change re-registers them), and a server a reload
// removes takes all of its own (the tool calls', and mcp-client's),
// under every policy.
func TestSeriesGoWithTheirTool(t *testing.T) {
	for _, config := range []string{"", ", toolLabel: none", ", toolLabelLimit: 1"} {
		t.Run(strings.TrimPrefix(config, ", "), func(t *testing.T) {
			fx, fy := fixtureEntry(t, "fixture", "fx", "-remove-tool"), fixtureEntry(t, "other", "fy")
			s := startServed(t, config, fx, fy)
			cs := s.connect(t)
			call(t, cs, "mcp__fx__fail", "mcp__fx__ping", "mcp__fx__ping", "mcp__fy__ping")
			has := func(labels []string, sub string) bool {
				return slices.ContainsFunc(labels, func(l string) bool { return strings.Contains(l, sub) })
			}
			for _, fam := range []string{"dsh_tool_calls_total", "dsh_tool_call_duration_seconds", "dsh_upstream_up"} {
				if !has(s.labels(t, fam), "server=fy") {
					t.Fatalf("%s has no series of fy before the reload: %v", fam, s.labels(t, fam))
				}
			}
			pingOK := "outcome=ok,server=fx,tool=mcp__fx__ping"
			switch config {
			case ", toolLabel: none":
				pingOK = "outcome=ok,server=fx,tool="
			case ", toolLabelLimit: 1":
				pingOK = "outcome=ok,server=fx,tool=other"
			}
			removeTool(t, s, cs, "fail")
			// remove-tool's call counts as ping's under none and the
			// limit: read after it.
			before := s.value(t, "dsh_tool_calls_total", pingOK)
			if config != ", toolLabel: none" {
				s.eventually(t, "the dropped tool's series go", func(labels func(string) []string) bool {
					for _, fam := range []string{"dsh_tool_calls_total", "dsh_tool_call_errors_total", "dsh_tool_call_duration_seconds"} {
						if has(labels(fam), "tool=mcp__fx__fail") {
							return false
						}
					}
					return true
				})
			}
			if got := s.value(t, "dsh_tool_calls_total", pingOK); got != before {
				t.Errorf("ping's count after fx's list changed: %v, want %v as before", got, before)
			}

			s.apply(t, config, fx)
			s.eventually(t, "the removed server's series go", func(labels func(string) []string) bool {
				for _, fam := range []string{"dsh_tool_calls_total", "dsh_tool_call_duration_seconds", "dsh_upstream_up", "dsh_upstream_reconnects_total"} {
					if has(labels(fam), "server=fy") {
						return false
					}
				}
				return true
			})
			if got := s.value(t, "dsh_tool_calls_total", pingOK); got != before {
				t.Errorf("ping's count after the reload: %v, want %v as before", got, before)
			}
		})
	}
}

// value is the value of family's series with labels (labels' form), -1
// without one.
func (s *served) value(t *testing.T, family, labels string) float64 {
	t.Helper()
	code, body := scrape(t, s.metricsURL)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", s.metricsURL, code)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fams[family].GetMetric() {
		var kv []string
		for _, l := range m.GetLabel() {
			if l.GetName() != host.EntryLabel {
				kv = append(kv, l.GetName()+"="+l.GetValue())
			}
		}
		slices.Sort(kv)
		if strings.Join(kv, ",") == labels {
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// TestScrapeToken: with tokenEnv or tokenFile, a scrape without the token
// or with another is answered 401, one with it 200; a non-loopback
// listener with a token does not warn.
func TestScrapeToken(t *testing.T) {
	const token = "scrape-token-0123456789abcdef0123"
	t.Setenv("DSH_TEST_METRICS_TOKEN", token)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, config := range map[string]string{
		"tokenEnv":  `tokenEnv: DSH_TEST_METRICS_TOKEN`,
		"tokenFile": fmt.Sprintf("tokenFile: %q", file),
	} {
		t.Run(name, func(t *testing.T) {
			log := &mcptest.SyncBuffer{}
			h := newHost(t, log)
			if err := apply(t, h, "plugins:\n  - {id: m, name: metrics, config: {listen: \"0.0.0.0:0\", "+config+"}}\n"); err != nil {
				t.Fatal(err)
			}
			url := strings.Replace(metricsURL(t, h, "m"), "0.0.0.0", "127.0.0.1", 1)
			hc := &http.Client{Transport: &http.Transport{}, Timeout: wait}
			defer hc.CloseIdleConnections()
			get := func(auth string) (int, string) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header.Get("WWW-Authenticate") + " " + string(b)
			}
			for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer wrong", "Bearer " + token[:len(token)-1], "Bearer " + token + token, "Bearer " + token + "x", "Basic " + token, token} {
				if code, body := get(auth); code != http.StatusUnauthorized || strings.Contains(body, "dsh_build_info") || !strings.HasPrefix(body, "Bearer") {
					t.Errorf("Authorization %q: %d %s, want 401 with WWW-Authenticate: Bearer", auth, code, body)
				}
			}
			if code, body := get("Bearer " + token); code != http.StatusOK || !strings.Contains(body, "dsh_build_info") {
				t.Errorf("with the token: %d\n%s", code, body)
			}
			if strings.Contains(log.String(), "reachable beyond this machine") {
				t.Errorf("a listener with a token warned:\n%s", log)
			}
		})
	}
}

// TestOptionErrors: each bad option is refused at its key's line, naming
// the entry and the key; a token source that fails names its key too,
// and the entry does not serve.
func TestOptionErrors(t *testing.T) {
	for key, config := range map[string]string{
		"toolLabel":      "listen: 127.0.0.1:0\ntoolLabel: tool #<",
		"toolLabelLimit": "listen: 127.0.0.1:0\ntoolLabelLimit: -1 #<",
		"tokenFile":      "listen: 127.0.0.1:0\ntokenEnv: X\ntokenFile: /x #<",
	} {
		hosttest.CheckKey(t, "metrics", key, config)
	}
	hosttest.CheckKey(t, "metrics", "toolLabelLimit", "listen: 127.0.0.1:0\ntoolLabel: none\ntoolLabelLimit: 3 #<")

	t.Setenv("DSH_TEST_METRICS_EMPTY", "")
	t.Setenv("DSH_TEST_METRICS_SHORT", "0123456789")
	t.Setenv("DSH_TEST_METRICS_SPACED", " 0123456789abcdef0123456789abcdef ")
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, listen, config string }{
		{"tokenEnv", "127.0.0.1:0", "tokenEnv: DSH_TEST_METRICS_EMPTY"},
		{"tokenEnv", "127.0.0.1:0", "tokenEnv: DSH_TEST_METRICS_SPACED"},
		{"tokenEnv", "0.0.0.0:0", "tokenEnv: DSH_TEST_METRICS_SHORT"},
		{"tokenFile", "0.0.0.0:0", fmt.Sprintf("tokenFile: %q", short)},
		{"tokenFile", "127.0.0.1:0", fmt.Sprintf("tokenFile: %q", filepath.Join(t.TempDir(), "absent"))},
	} {
		h := newHost(t, io.Discard)
		err := apply(t, h, "plugins:\n  - {id: m, name: metrics, config: {listen: \""+c.listen+"\", "+c.config+"}}\n")
		st := host.Find(h.Status(), "m")
		msg := st.Err + fmt.Sprint(err)
		if st.State != host.StateFailed || !strings.Contains(msg, c.key+": ") || strings.Contains(msg, "0123456789") {
			t.Errorf("%s on %s: %v, %+v; want the entry failed naming %s, not showing the token", c.config, c.listen, err, st, c.key)
		}
	}
}
