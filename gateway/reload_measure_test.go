package gateway

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMeasureEditToListChanged measures how long a client of `dsh-host
// serve --stdio` waits, after an editor saves the composition (write a
// temporary file, rename it into place), for notifications/tools/list_changed:
// the file watcher's debounce, the reload, the gateway's debounce and diff.
// Each edit toggles a keep pattern of mcp-fold, so the surface changes
// without starting a process; after each, the test waits for silence to
// count missed and extra notifications. Not a CI test:
// DSH_MEASURE=1 go test -run TestMeasureEditToListChanged -v ./gateway/
func TestMeasureEditToListChanged(t *testing.T) {
	if testing.Short() || os.Getenv("DSH_MEASURE") == "" {
		t.Skip("a measurement, not a test: set DSH_MEASURE=1")
	}
	const edits = 21
	const silence = 500 * time.Millisecond
	bin := dshHostBinary(t)
	e := newE2E(t)
	cmd := exec.Command(bin, "serve", "--stdio", "-c", e.composition)
	cmd.Env = e.env()
	_, changed := goClient(t, &mcp.CommandTransport{Command: cmd})
	folds := []string{
		"  - id: fold\n    name: mcp-fold\n    config: {keep: [mcp__fx__ping]}\n",
		"  - id: fold\n    name: mcp-fold\n    config: {}\n",
	}
	time.Sleep(silence) // the start's own changes, if any, pass
	drain(changed)
	var took []time.Duration
	missed, extra := 0, 0
	for i := range edits {
		start := time.Now()
		e.write(t, folds[i%2])
		select {
		case <-changed:
			took = append(took, time.Since(start))
		case <-time.After(5 * time.Second):
			missed++
			continue
		}
		time.Sleep(silence)
		extra += drain(changed)
	}
	slices.Sort(took)
	if len(took) == 0 {
		t.Fatalf("no notification after %d edits", edits)
	}
	t.Logf("edit → list_changed over %d edits: median %v, min %v, max %v; missed %d, extra %d",
		len(took), took[len(took)/2].Round(time.Millisecond), took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), missed, extra)
}

func drain(c chan struct{}) (n int) {
	for {
		select {
		case <-c:
			n++
		default:
			return n
		}
	}
}
