package policy_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

// console attaches a web console's broker to the composition hosttest
// runs (composition.yml in the working directory) and answers each ask
// that reaches it with the next of answers, recording what it saw.
type console struct {
	asks chan askbroker.Ask
}

func attachConsole(t *testing.T, answers ...askbroker.Answer) *console {
	t.Helper()
	file, _ := filepath.Abs("composition.yml")
	b, err := askbroker.Listen(file)
	if err != nil {
		t.Fatal(err)
	}
	c := &console{asks: make(chan askbroker.Ask, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	events := b.Subscribe(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			if ev.Ask == nil {
				continue
			}
			c.asks <- *ev.Ask
			if len(answers) > 0 {
				b.Answer(ev.Ask.ID, answers[0])
				answers = answers[1:]
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		b.Close()
		<-done
	})
	return c
}

// asked returns the asks the console has seen since the last call.
func (c *console) asked() []askbroker.Ask {
	var out []askbroker.Ask
	for {
		select {
		case a := <-c.asks:
			out = append(out, a)
		default:
			return out
		}
	}
}

// TestConsoleAnswers: the console's answers are kept as the terminal's:
// session answers the caller's next calls, always is saved in settings,
// once answers one call and a folded call's inner one; what it may offer
// depends on the caller.
func TestConsoleAnswers(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	h := hosttest.Start(t, counterComposition(fixture, `        - tools: ["mcp__fx__count", "mcp__fx__shout", "mcp_call"]
          action: ask
`), hosttest.Settings("policy: {}\n"))
	reg := h.Tools()
	run := func(c tools.Caller, oneShot bool, name, args string) tools.Result {
		ch := &tools.Channels{}
		if oneShot {
			ch.OneShot = &tools.OneShot{}
		}
		return reg.Run(t.Context(), tools.Call{Caller: c, Name: name, Args: []byte(args), Channels: ch})
	}
	chatP := tools.Caller{Kind: tools.CallerChat, ID: "p"}
	gw := tools.Caller{Kind: tools.CallerGateway, ID: "gateway"}
	ui := tools.Caller{Kind: tools.CallerUI}
	con := attachConsole(t, askbroker.Session, askbroker.Once, askbroker.Always, askbroker.Once)

	// chat -p: session, then its next call is not asked.
	if res := run(chatP, true, "mcp__fx__count", "{}"); res.Err != nil {
		t.Fatalf("approved for the session: %v", res.Err)
	}
	if res := run(chatP, true, "mcp__fx__count", "{}"); res.Err != nil {
		t.Fatalf("the session's next call: %v", res.Err)
	}
	asks := con.asked()
	if len(asks) != 1 || !slices.Equal(asks[0].Choices, []askbroker.Answer{askbroker.Once, askbroker.Session, askbroker.Always}) || asks[0].Caller != "chat p" {
		t.Errorf("chat -p's asks: %+v; want one, offering once, session, always", asks)
	}

	// A gateway's client: once, and no session to offer.
	if res := run(gw, false, "mcp__fx__shout", `{"text":"a"}`); res.Err != nil || hosttest.Text(res) != "A" {
		t.Fatalf("approved once: %q, %v", hosttest.Text(res), res.Err)
	}
	asks = con.asked()
	if len(asks) != 1 || !slices.Equal(asks[0].Choices, []askbroker.Answer{askbroker.Once, askbroker.Always}) || asks[0].Server != "fx" {
		t.Errorf("the gateway's asks: %+v; want one, offering once, always", asks)
	}

	// always: saved in the settings, then nobody is asked.
	if res := run(gw, false, "mcp__fx__shout", `{"text":"b"}`); res.Err != nil {
		t.Fatalf("approved always: %v", res.Err)
	}
	st, _ := host.Lookup(h.Host, settings.Key)
	if v, _, _ := settings.Read[policy.Approvals](st, policy.SettingsSection); !slices.Contains(v.Allow, "mcp__fx__shout") {
		t.Errorf("settings' approvals: %v, want mcp__fx__shout", v.Allow)
	}
	if res := run(ui, false, "mcp__fx__shout", `{"text":"c"}`); res.Err != nil {
		t.Fatalf("after always: %v", res.Err)
	}
	con.asked()

	// mcp_call approved once: its tool is not asked again.
	if res := run(ui, false, "mcp_call", `{"tool":"mcp__fx__count","arguments":{}}`); res.Err != nil {
		t.Fatalf("mcp_call approved once: %v", res.Err)
	}
	if asks := con.asked(); len(asks) != 1 || asks[0].Tool != "mcp_call" || !strings.Contains(string(asks[0].Arguments), "mcp__fx__count") {
		t.Errorf("the folded call's asks: %+v; want mcp_call's alone", asks)
	}
}

// TestConsoleDeniesFailClosed: what is not an approval denies the call:
// the console's deny, and no console at all.
func TestConsoleDeniesFailClosed(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	h := hosttest.Start(t, counterComposition(fixture, `        - tools: ["mcp__fx__count"]
          action: ask
`))
	reg := h.Tools()
	caller := tools.Caller{Kind: "test"}
	if res := reg.Execute(t.Context(), caller, "mcp__fx__count", nil); res.Err == nil || !strings.Contains(res.Err.Error(), "nobody can answer here") || !strings.Contains(res.Err.Error(), "no web console is attached") {
		t.Errorf("no console: %v, want the denial", res.Err)
	}
	attachConsole(t, askbroker.Deny)
	if res := reg.Execute(t.Context(), caller, "mcp__fx__count", nil); res.Err == nil || !strings.Contains(res.Err.Error(), "denied at the console") {
		t.Errorf("denied at the console: %v", res.Err)
	}
}
