package main

import (
	"strings"
	"testing"
)

// TestServeMetricsFlagBesideAMetricsEntry: serve --metrics starts the
// listener a metrics entry starts; with both, serve refuses to start,
// naming the entry that has it, rather than serve the metrics twice.
func TestServeMetricsFlagBesideAMetricsEntry(t *testing.T) {
	file := writeComposition(t, "plugins:\n  - {id: scrape, name: metrics, config: {listen: \"127.0.0.1:0\"}}\n")
	code, _, stderr := dshHost(t, "serve", "--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "-c", file)
	if code == exitOK || !strings.Contains(stderr, "metrics listener") || !strings.Contains(stderr, `"scrape"`) {
		t.Errorf("exit %d, want a refusal naming entry scrape:\n%s", code, stderr)
	}
}
