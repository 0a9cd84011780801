package webui_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/internal/testkit/browsertest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// asked is one host's ask and what it got back.
type asked struct {
	answer askbroker.Answer
	err    error
}

// ask puts a to the composition's broker as a host does, in the
// background. It waits as long as an ask may: ctx, the test's bound, ends
// it, not a timer that would race the test's clicks on a loaded machine.
func ask(ctx context.Context, file string, a askbroker.Ask) <-chan asked {
	ch := make(chan asked, 1)
	go func() {
		ans, err := askbroker.AskConsole(ctx, file, a, askbroker.MaxTimeout)
		ch <- asked{ans, err}
	}()
	return ch
}

// TestApprovalsInBrowser: an ask the composition's broker gets shows on
// the Approvals page with its caller, tool and arguments (hostile ones as
// text), and only the answers its host takes; the answer clicked is the
// one the asking host gets, Allow or Deny.
func TestApprovalsInBrowser(t *testing.T) {
	r := startRig(t)
	b := browsertest.Start(t, 90*time.Second)
	base := origin(r.con.URL())
	b.Do(t, chromedp.Navigate(r.con.URL()), chromedp.WaitVisible("h1"))
	b.Do(t, chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible("#no-asks"))

	ctx, cancel := context.WithTimeout(t.Context(), 80*time.Second)
	defer cancel()
	args, _ := json.Marshal(map[string]string{"path": `<img src="` + r.beacon.URL + `/ask">`})
	first := ask(ctx, r.file, askbroker.Ask{Caller: "gateway claude-code", Server: "fx", Tool: "mcp__fx__count", Arguments: args,
		Preview: "-old line\n+<img src=\"" + r.beacon.URL + "/preview\">\n",
		Rule:    "rule 1 (ask)", Choices: []askbroker.Answer{askbroker.Once, askbroker.Session}})
	// It appears live, on the page that was open before it came.
	b.Do(t, chromedp.WaitVisible(`section.ask`))
	text, _ := chromedp.Run(b.Ctx, chromedp.Text(`section.ask`))
	for _, want := range []string{"mcp__fx__count", "gateway claude-code", "rule 1 (ask)", `<img src=`, "-old line", `+<img src="`} {
		if !strings.Contains(text, want) {
			t.Errorf("the ask shows\n%s\nwant %q", text, want)
		}
	}
	if hidden := browsertest.Eval[bool](t, b, `document.querySelector('section.ask button[data-answer="always"]').hidden`); !hidden {
		t.Error("Always is offered to a host that does not take it")
	}
	if badge, _ := chromedp.Run(b.Ctx, chromedp.Text(`#ask-count`)); badge != "1 waiting" {
		t.Errorf("badge %q; want 1 waiting", badge)
	}
	b.Do(t, chromedp.Click(`section.ask button[data-answer="once"]`), chromedp.WaitNotPresent(`section.ask`))
	if got := <-first; got.err != nil || got.answer != askbroker.Once {
		t.Errorf("the host got %q, %v; want once", got.answer, got.err)
	}

	// A second ask, waiting before the page loads, is listed by the page
	// and denied there.
	second := ask(ctx, r.file, askbroker.Ask{Caller: "chat -p", Tool: "mcp__fx__shout", Rule: "rule 2 (ask)", Choices: []askbroker.Answer{askbroker.Once},
		Preview: "+the second's change\n"})
	mcptest.WaitFor(t, 30*time.Second, "the second ask at the console", func() bool { return len(r.con.Pending()) > 0 })
	b.Do(t, chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(`section.ask`))
	// The page's own rendering shows the preview too.
	if text, _ := chromedp.Run(b.Ctx, chromedp.Text(`section.ask`)); !strings.Contains(text, "+the second's change") {
		t.Errorf("the waiting ask shows\n%s\nwant its preview", text)
	}
	b.Do(t, chromedp.Click(`section.ask button[data-answer="deny"]`), chromedp.WaitNotPresent(`section.ask`))
	if got := <-second; got.err != nil || got.answer != askbroker.Deny {
		t.Errorf("the host got %q, %v; want deny", got.answer, got.err)
	}
	b.Clean(t, "approvals")
	if n := r.beacon.hits.Load(); n != 0 {
		t.Errorf("the arguments' markup ran: %d requests", n)
	}
}
