package console

// The tables and texts the console prints, which the one-shot commands
// print too: instances, tools, a call's content, the prompt.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Tool is one registered tool as listings show it.
type Tool = app.Tool

// WriteTools prints rows as a table.
func WriteTools(w io.Writer, rows []Tool) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no tools registered")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSERVER\tRAW NAME\tPROMPT\tDESCRIPTION")
	folded, withheld := 0, 0
	for _, r := range rows {
		prompt := "native"
		switch {
		case r.Withheld:
			prompt = "withheld"
			withheld++
		case r.Folded:
			prompt = "folded"
			folded++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, Dash(r.Server), Dash(r.RawName), prompt, OneLine(r.Description, 72))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d tools, %d folded (in the registry, absent from the prompt)\n", len(rows), folded)
	if withheld > 0 {
		fmt.Fprintf(w, "%d withheld: not offered to this caller, calls refused (the policy holds a changed tool until 'dsh-host trust', or its rules deny it); '/policy' says why\n", withheld)
	}
	for _, r := range rows {
		if r.Hidden != "" {
			fmt.Fprintf(w, "warning: the description of %s hides text a model reads: %s\n", r.Name, r.Hidden)
		}
	}
}

// WriteInstances prints a status table. toolCount, when non-nil, maps an
// instance id to the number of tools it registered.
func WriteInstances(w io.Writer, st []host.InstanceStatus, toolCount map[string]int, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPLUGIN\tSTATE\tSINCE\tTOOLS\tDETAIL")
	for _, s := range st {
		detail := s.Detail
		if s.Kept != "" {
			// First: the entry does not run what its file says.
			detail = strings.TrimSuffix(s.Kept+"; "+detail, "; ")
		}
		if s.Err != "" {
			if detail != "" {
				detail += "; "
			}
			detail += s.Err
		}
		tc := "-"
		if n, ok := toolCount[s.ID]; ok {
			tc = fmt.Sprint(n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Plugin, s.State, Since(s.Since, now), tc, Dash(OneLine(detail, 100)))
	}
	tw.Flush()
}

// Since renders t relative to now ("3s ago") with its clock time.
func Since(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	return fmt.Sprintf("%s (%s ago)", t.Local().Format(time.TimeOnly), d)
}

// WriteContent prints model-facing content: text as it is, images as a
// one-line reference.
func WriteContent(w io.Writer, content []tools.Content) {
	for _, c := range content {
		switch {
		case c.Type == "image" && c.Image != nil:
			fmt.Fprintf(w, "[image %s %s %dx%d, %d bytes]\n", c.Image.ID, c.Image.MediaType, c.Image.Width, c.Image.Height, c.Image.Bytes)
		case c.Type == "text":
			fmt.Fprint(w, c.Text)
			if !strings.HasSuffix(c.Text, "\n") {
				fmt.Fprintln(w)
			}
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "%s\n", b)
		}
	}
}

// ParseToolArgs checks that s is a JSON object; empty means {}.
func ParseToolArgs(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("arguments must be a JSON object, like '{\"path\":\"/tmp\"}': %q", OneLine(s, 60))
	}
	return json.RawMessage(s), nil
}

// PromptSize is the size line of a tools array of n tools.
func PromptSize(n int, b []byte) string {
	return fmt.Sprintf("%d tools, %d bytes, ~%d tokens (bytes/4)", n, len(b), (len(b)+3)/4)
}

// WritePromptOf prints the tools array a host answered with, indented
// for reading, its sections and its size.
func WritePromptOf(w io.Writer, p app.Prompt) error {
	var pretty strings.Builder
	if err := indentJSON(&pretty, []byte(p.ToolsJSON)); err != nil {
		return err
	}
	fmt.Fprintln(w, pretty.String())
	for _, s := range p.Sections {
		fmt.Fprintf(w, "section %s: %d bytes\n", s.Name, len(s.Text))
	}
	fmt.Fprintln(w, PromptSize(p.Count, []byte(p.ToolsJSON)))
	return nil
}

// indentJSON indents b keeping its members' order (what the model sees).
func indentJSON(w io.Writer, b []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return fmt.Errorf("the tools array is not valid JSON: %w", err)
	}
	_, err := buf.WriteTo(w)
	return err
}

// OneLine returns the first line of s, cut to max runes with an ellipsis.
func OneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// Dash is s, or "-" for an empty s (a table's empty cell).
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSON prints v as indented JSON, as every --json does: HTML
// characters as they are, since a script, not a browser, reads it.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
