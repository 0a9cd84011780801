package clock_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	_ "github.com/dsh-host/dsh-host/docs/clock"
	"github.com/dsh-host/dsh-host/host/hosttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestClock runs the page's plugins as a user would: the tool takes the
// zone from the call or the entry and the layout from settings.yaml, the
// command answers the same, the resource reads and the prompt is a command.
func TestClock(t *testing.T) {
	h := hosttest.Start(t, "plugins:\n  - {id: clock, name: example-clock, config: {zone: Asia/Tokyo}}\n  - {id: utc, name: example-clock}\n  - {id: zones, name: example-clock-zones}\n",
		hosttest.Settings("clock: {layout: MST}\n"))
	for call, want := range map[[2]string]string{{"clock_now", `{}`}: "JST", {"clock_now", `{"zone":"UTC"}`}: "UTC", {"utc_now", ``}: "UTC"} {
		if res := h.Call(call[0], call[1]); res.Err != nil || hosttest.Text(res) != want {
			t.Errorf("%s %s = %+v, want %s", call[0], call[1], res, want)
		}
	}
	if res := h.Call("clock_now", `{"zone":"Nowhere/Town"}`); res.Err == nil || !strings.Contains(res.Err.Error(), "Nowhere/Town") {
		t.Errorf("an unknown zone = %+v, want an error naming it", res)
	}
	if got := h.Command("/utc"); got.Text != "UTC" {
		t.Errorf("/utc = %+v", got)
	}
	if got := h.Command(`/zones_meet "UTC and Asia/Tokyo"`); got.Text != "[user]\nFind a meeting time that suits UTC and Asia/Tokyo." {
		t.Errorf("/zones_meet = %+v", got)
	}
	if res := h.Call("mcp_read", `{"uri":"clock://zones"}`); res.Err != nil || hosttest.Text(res) != "Resource clock://zones (text/plain):\nUTC\nAsia/Tokyo\n" {
		t.Errorf("mcp_read clock://zones = %+v", res)
	}
}
