package resources_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestPromptCommand: a plugin's prompt becomes /<public>: words fill the
// arguments in declared order or by name, the prompt's messages come back
// as text under their roles, a missing required argument or a word too
// many is an error reply with the usage, and the command completes the
// names of the arguments and, through Complete, their values.
func TestPromptCommand(t *testing.T) {
	var got []map[string]string
	get := func(_ context.Context, name string, args map[string]string, _ *tools.Channels) (*mcp.GetPromptResult, error) {
		got = append(got, args)
		return &mcp.GetPromptResult{Description: "a meeting", Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("%s at %s in %s", name, args["hour"], args["zone"])}},
			{Role: "assistant", Content: &mcp.ImageContent{MIMEType: "image/png", Data: []byte("png")}},
		}}, nil
	}
	p := resources.Prompt{Server: "clock", Public: "clock_meet", Prompt: mcp.Prompt{Name: "meet", Description: "Plan a\nmeeting.", Arguments: []*mcp.PromptArgument{
		{Name: "zone", Description: "an IANA zone", Required: true}, {Name: "hour"},
	}}}
	complete := func(_ context.Context, req resources.CompleteRequest) ([]string, error) {
		return []string{req.Ref.Name + ":" + req.Argument + ":" + req.Value}, nil
	}
	cmds := commands.New()
	s := host.NewScope(context.Background(), "clock", nil)
	defer s.Dispose(time.Second)
	if _, err := cmds.Register(s, resources.PromptCommand{Prompt: p, Get: get, Complete: complete}.Command()); err != nil {
		t.Fatal(err)
	}
	run := func(line string) commands.Reply {
		return cmds.Run(context.Background(), tools.Caller{Kind: "test"}, line)
	}

	want := commands.Reply{Text: "a meeting\n\n[user]\nmeet at 9 in Asia/Tokyo\n\n[assistant]\n[image: image/png, 3 bytes; not kept: no attachment store is mounted]"}
	if reply := run("/clock_meet Asia/Tokyo 9"); reply != want {
		t.Errorf("reply:\n%s\nwant:\n%s", reply.Text, want.Text)
	}
	run(`/clock_meet hour=10 "Europe/Paris"`)
	run(`/clock_meet zone=a=b x+y=1`)
	if diff := cmp.Diff([]map[string]string{{"zone": "Asia/Tokyo", "hour": "9"}, {"zone": "Europe/Paris", "hour": "10"}, {"zone": "a=b", "hour": "x+y=1"}}, got); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	for line, want := range map[string]string{
		"/clock_meet":                   "missing required argument(s): zone (an IANA zone) — usage: /clock_meet zone=… [hour=…]",
		"/clock_meet UTC 9 10":          `too many arguments: "10" is left over (arguments: zone, hour) — usage: /clock_meet zone=… [hour=…]`,
		"/clock_meet zone=UTC zone=GMT": "argument zone given twice — usage: /clock_meet zone=… [hour=…]",
		// A mistyped name is refused, not taken as the next value.
		"/clock_meet zon=UTC": "unknown argument zon (arguments: zone, hour; a value holding '=' goes after its argument's name: zone=…) — usage: /clock_meet zone=… [hour=…]",
	} {
		if reply := run(line); !reply.Error || reply.Text != want {
			t.Errorf("%s = %+v, want the error %q", line, reply, want)
		}
	}
	if len(got) != 3 {
		t.Errorf("the prompt was got %d times, want 3: a refused line must not reach it", len(got))
	}
	for line, want := range map[string][]string{
		"/clock_meet ":           {"meet:zone:"},
		"/clock_meet UTC h":      {"hour=", "meet:hour:h"},
		"/clock_meet hour=1":     {"hour=meet:hour:1"},
		"/clock_meet UTC 9 zone": nil,
	} {
		c, _ := cmds.Complete(context.Background(), line)
		if !cmp.Equal(c, want) {
			t.Errorf("complete %q = %q, want %q", line, c, want)
		}
	}
	if list := cmds.List(); len(list) != 1 || list[0].Usage != "zone=… [hour=…]" || !strings.Contains(list[0].Description, `prompt "meet" of clock: Plan a meeting.`) {
		t.Errorf("listed as %+v", list)
	}
}
