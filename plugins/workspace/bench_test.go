package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/plugins/workspace"
	"github.com/dsh-host/dsh-host/services/tools"
)

// BenchmarkSearch is one search over 1,000 files of 200 lines (4.6 MB),
// one match a file, called as a tool's body (no host, no policy).
func BenchmarkSearch(b *testing.B) {
	dir := b.TempDir()
	line := strings.Repeat("x", 20) + "\n"
	for i := range 1000 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(line, 199)+"needle\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	w, err := workspace.Open(workspace.Config{Dir: dir, Sandbox: "strict", Timeout: 1, MaxOutput: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var search tools.Definition
	for _, d := range w.Definitions() {
		if d.Name == "search" {
			search = d
		}
	}
	args := json.RawMessage(`{"pattern":"need+le","max_results":1000}`)
	for b.Loop() {
		out, err := search.Execute(context.Background(), tools.Call{Name: "search", Args: args})
		if err != nil || strings.Count(out.Value.(string), "\n") != 1000 {
			b.Fatalf("%v", err)
		}
	}
}
