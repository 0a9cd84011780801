package mdterm

import (
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// document holds each construct mdterm renders.
const document = `# Title #

Some **bold**, *italic*, ***both***, ~~struck~~ and ` + "`code`" + ` words, a [link](https://example.com "title"), <https://example.com/auto>, an ![image](x.png), snake_case_name, 2 * 3 * 4, \*not italic\* and a line long enough to be wrapped at least once.  
After a hard break.

## Lists

- one
- two
  - nested *one*
  - nested two
- [ ] a task
- [x] a done task

3. third
4. fourth

   a paragraph in the fourth
5. fifth

> a quote with **bold**
lazily continued
>
> > nested

` + "```go" + `
func f() int {
	return 1 // not highlighted, not wrapped even when the line is longer than the width
}
` + "```" + `

    indented code

| Name | Count | Note |
|:-----|------:|:----:|
| a    | 1     | ` + "`x|y`" + ` |
| **bb** | 22  | c |

---

Setext heading
==============
`

// TestRenderGolden: the document plain (NO_COLOR) and styled, 60 columns
// wide. Changes are meant only when the renderer's output is.
func TestRenderGolden(t *testing.T) {
	golden.Check(t, "document_plain", []byte(Render(document, Options{Width: 60})), *update)
	golden.Check(t, "document_styled", []byte(Render(document, Options{Width: 60, Styled: true})), *update)
}

// TestRenderConstructs: each construct as plain text.
func TestRenderConstructs(t *testing.T) {
	for _, c := range []struct{ name, md, want string }{
		{"heading marks go", "### Three ###", "  Three\n"},
		{"no space after # is text", "#hashtag", "  #hashtag\n"},
		{"snake_case stays", "a_b_c and __init__", "  a_b_c and init\n"},
		{"unmatched marks stay", "**open and *half", "  **open and *half\n"},
		{"spaced stars are no emphasis", "2 * 3 * 4", "  2 * 3 * 4\n"},
		{"escapes", `\*a\* \_b\_ \[c\] \` + "`", "  *a* _b_ [c] `\n"},
		{"code span keeps marks", "`**a** _b_` and ``x ` y``", "  `**a** _b_` and `x ` y`\n"},
		{"link", "[text](https://a.b/c_(d)) end", "  text (https://a.b/c_(d)) end\n"},
		{"link to itself", "[https://a.b](https://a.b)", "  https://a.b\n"},
		{"autolink", "<https://a.b/x?y>, <me@a.b>, <not a link>", "  https://a.b/x?y, me@a.b, <not a link>\n"},
		{"broken link stays", "[text](no end and [x]", "  [text](no end and [x]\n"},
		{"image", "![alt text](a.png)", "  [image: alt text] (a.png)\n"},
		{"html stays", "<b>hi</b>", "  <b>hi</b>\n"},
		{"ordered from 7", "7. a\n8. b", "  7. a\n  8. b\n"},
		{"ordered widths align", "9) a\n1) b", "   9. a\n  10. b\n"},
		{"a rule is no list", "- - -", "  " + strings.Repeat("─", 40) + "\n"},
		{"a paragraph ends at a list", "text\n- item", "  text\n\n  • item\n"},
		{"a list item continues lazily", "- item\ncontinued", "  • item continued\n"},
		{"loose items after blank lines", "- a\n\n- b", "  • a\n  • b\n"},
		{"blank line ends the list", "- a\n\ntext", "  • a\n\n  text\n"},
		{"tilde fence", "~~~\n**x**\n~~~", "    **x**\n"},
		{"unclosed fence runs to the end", "```\na\n\nb", "    a\n\n    b\n"},
		{"table with more delimiters is text", "a | b\n--|--|--", "  a | b --|--|--\n"},
		{"table too wide stays unpadded", "| a | b |\n|---|---|\n| " + strings.Repeat("x", 50) + " | y |",
			"  a │ b\n  " + strings.Repeat("x", 50) + " │ y\n"},
		{"tabs indent", "-\ta\n\t- b", "  • a\n    • b\n"},
		{"empty", "\n\n  \n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Render(c.md, Options{Width: 44}); got != c.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", c.md, got, c.want)
			}
		})
	}
}

var sgrRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestRenderWraps: no line is wider than the width (its margins in it)
// when no word is, styled or not; a word wider than a line has its own.
func TestRenderWraps(t *testing.T) {
	text := strings.Repeat("Some **bold words** and `code spans`, [links](https://x.y) and *more* text. ", 20)
	for _, styled := range []bool{false, true} {
		for _, width := range []int{20, 33, 80} {
			out := Render(text+"\n\n- "+text+"\n\n> "+text, Options{Width: width, Styled: styled})
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if w := displayWidth(sgrRE.ReplaceAllString(l, "")); w > width-2 {
					t.Errorf("styled %v, width %d: a line of %d columns: %q", styled, width, w, l)
				}
			}
		}
	}
	long := strings.Repeat("x", 30)
	if got := Render("a "+long+" b", Options{Width: 20}); got != "  a\n  "+long+"\n  b\n" {
		t.Errorf("a long word: %q", got)
	}
	if got := Render("a b c", Options{Width: 0}); got != "  a b c\n" {
		t.Errorf("no width: %q", got)
	}
}

// TestRenderHostile: the model's text is not trusted. Marks that never
// close, nesting without end and huge runs render in a time linear in
// their size (quadratic would outlast the test's timeout), nest no deeper
// than maxDepth, and no escape but the renderer's own reaches the output.
func TestRenderHostile(t *testing.T) {
	const n = 50_000
	for name, md := range map[string]string{
		"unclosed stars":       strings.Repeat("**a ", n),
		"unclosed underscores": strings.Repeat("_a ", n),
		"unclosed strikes":     strings.Repeat("~~a ", n),
		"mixed marks":          strings.Repeat("*_~`[", n),
		"unclosed brackets":    strings.Repeat("[a", n),
		"unclosed links":       strings.Repeat("[a](", n),
		"backtick runs":        strings.Repeat("` `` ```a", n/4),
		"nested emphasis":      strings.Repeat("*a **b ", n/2) + strings.Repeat("b** a*", n/2),
		"deep quotes":          strings.Repeat(">", n) + " x",
		"deep lists":           nestedList(1000),
		"wide table":           "|" + strings.Repeat("a|", n) + "\n|" + strings.Repeat("-|", n),
		"long rows":            strings.Repeat("- a\n", n),
		"escapes":              strings.Repeat("\\", n),
		"fences":               strings.Repeat("```\n", n),
	} {
		for _, styled := range []bool{false, true} {
			out := Render(md, Options{Width: 80, Styled: styled})
			if strings.Contains(sgrRE.ReplaceAllString(out, ""), "\x1b") {
				t.Errorf("%s: an escape not the renderer's", name)
			}
		}
	}
	out := Render(nestedList(50), Options{Width: 80})
	if !strings.Contains(out, "- ") {
		t.Errorf("a list nested past maxDepth is not left as written:\n%s", out)
	}
}

func nestedList(depth int) string {
	var b strings.Builder
	for i := range depth {
		b.WriteString(strings.Repeat("  ", i) + "- level\n")
	}
	return b.String()
}

// FuzzRender: any text renders without a panic, and nothing but SGR codes
// are added.
func FuzzRender(f *testing.F) {
	f.Add(document, 60)
	f.Add("- a\n  > b\n  > ```\n  > c", 10)
	f.Add("| a |\n|---|\n| `|` |", 5)
	f.Add("[a](b (c)) ![d](e) <f:g> **h _i_ j**", 1)
	f.Fuzz(func(t *testing.T, md string, width int) {
		if strings.Contains(md, "\x1b") {
			return // mdterm's input has its escapes made visible (termsafe)
		}
		width %= 1000
		if out := Render(md, Options{Width: width}); strings.Contains(out, "\x1b") {
			t.Errorf("an escape in plain text: %q", out)
		}
		if out := Render(md, Options{Width: width, Styled: true}); strings.Contains(sgrRE.ReplaceAllString(out, ""), "\x1b") {
			t.Errorf("an escape not the renderer's: %q", out)
		}
	})
}

// BenchmarkRender renders a 2 KB block of paragraphs, lists and code.
func BenchmarkRender(b *testing.B) {
	b.SetBytes(int64(len(document)))
	for b.Loop() {
		Render(document, Options{Width: 100, Styled: true})
	}
}
