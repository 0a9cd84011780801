package importer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// TestMinimal renders a config without what it leaves at its defaults, down
// to the fields of a nested struct, but keeps a map's keys, even empty.
func TestMinimal(t *testing.T) {
	cfg := mcpclient.Defaults()
	cfg.Transport, cfg.ServerName, cfg.Command = mcpclient.TransportStdio, "s", "x"
	cfg.Env = map[string]string{"EMPTY": "", "A": "1"}
	cfg.ToolCallTimeoutMs = 5000
	cfg.Reconnect.Enabled = false
	n, err := minimal(cfg, mcpclient.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	want := "transport: stdio\nserverName: s\ncommand: x\nenv:\n    A: \"1\"\n    EMPTY: \"\"\ntoolCallTimeoutMs: 5000\nreconnect:\n    enabled: false\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
