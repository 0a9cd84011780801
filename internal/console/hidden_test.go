package console

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestToolsFlagsHiddenText: `dsh-host tools` warns about a description
// that carries invisible characters, and spells out what tag characters
// hide.
func TestToolsFlagsHiddenText(t *testing.T) {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "test", nil)
	defer s.Dispose(0)
	ok := func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil }
	for _, d := range []tools.Definition{
		{Name: "plain", Description: "Read a file.", Execute: ok},
		{Name: "zw", Description: "Read\u200b a file.", Execute: ok},
		{Name: "tagged", Description: "Read a file.\U000E0041\U000E0042", Execute: ok},
	} {
		if _, err := reg.Register(s, d); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := app.ListTools(context.Background(), reg, tools.Caller{Kind: tools.CallerConsole})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	WriteTools(&out, rows)
	got := out.String()
	for _, want := range []string{
		"warning: the description of zw hides text a model reads: 1 invisible character(s) (U+200B)\n",
		`warning: the description of tagged hides text a model reads: 2 invisible character(s) (U+E0041, U+E0042); tag characters spell "AB"` + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tools output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "description of plain") {
		t.Errorf("a plain description is flagged:\n%s", got)
	}
}
