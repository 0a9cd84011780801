// Package docs holds the project's reference pages; its tests check that
// the pages hold together: every relative link (file and #anchor) of
// README.md and docs/*.md resolves, and every flag a page shows a
// `dsh-host` subcommand taking is one that subcommand has.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// page is one Markdown file, split into what a reader sees as prose and
// what is code: fenced blocks and inline code spans.
type page struct {
	path  string   // as given, for messages
	lines []string // the file's lines
}

func readPage(path string) (page, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return page{}, err
	}
	return page{path: path, lines: strings.Split(string(b), "\n")}, nil
}

// walk calls prose for each line outside fenced blocks and code for each
// fenced block's line and each inline code span, with its 1-based line.
func (p page) walk(prose func(line int, text string), code func(line int, text string)) {
	fence := ""
	for i, l := range p.lines {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
				continue
			}
			code(i+1, l)
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		// Inline code spans: everything between backticks is code, the
		// rest prose (a span never crosses a line in these pages).
		parts := strings.Split(l, "`")
		var rest strings.Builder
		for j, s := range parts {
			if j%2 == 1 && j < len(parts)-1 {
				code(i+1, s)
				rest.WriteString("``")
				continue
			}
			rest.WriteString(s)
		}
		prose(i+1, rest.String())
	}
}

// anchors returns the #fragments GitHub gives p's headings: lower case,
// punctuation dropped, spaces to hyphens, a repeat suffixed -1, -2, ...
func (p page) anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, l := range p.lines {
		t := strings.TrimLeft(l, " ")
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(l, -1) {
			if !fence {
				out[m[1]] = true
			}
		}
		h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if fence || !strings.HasPrefix(l, "#") || !ok {
			continue
		}
		a := slug(strings.TrimSpace(h))
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// htmlAnchorRE matches an anchor a page sets by hand: <a id="limits"></a>.
var htmlAnchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)

// slug is GitHub's anchor for a heading's text: backticks and other
// punctuation are dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// linkRE matches a Markdown link or image's target: [text](target) or
// [text](target "title").
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// checkLinks returns a problem for each relative link of the pages that
// names a file that does not exist or an anchor its page does not have.
func checkLinks(paths []string) []string {
	var probs []string
	pages := map[string]page{}
	load := func(path string) (page, error) {
		if p, ok := pages[path]; ok {
			return p, nil
		}
		p, err := readPage(path)
		if err == nil {
			pages[path] = p
		}
		return p, err
	}
	for _, path := range paths {
		p, err := load(path)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		p.walk(func(line int, l string) {
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
					if _, err := os.Stat(dest); err != nil {
						probs = append(probs, fmt.Sprintf("%s:%d: link %s: no file %s", path, line, target, dest))
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					probs = append(probs, fmt.Sprintf("%s:%d: link %s: an anchor in a file that is not Markdown", path, line, target))
					continue
				}
				dp, err := load(dest)
				if err != nil {
					probs = append(probs, fmt.Sprintf("%s:%d: link %s: %v", path, line, target, err))
					continue
				}
				if !dp.anchors()[frag] {
					probs = append(probs, fmt.Sprintf("%s:%d: link %s: %s has no heading #%s", path, line, target, dest, frag))
				}
			}
		}, func(int, string) {})
	}
	return probs
}

// command is one `dsh-host` command line a page shows.
type command struct {
	where string   // file:line
	sub   string   // the subcommand ("run" when it names none)
	flags []string // each flag's name, without dashes and value
}

// commands returns every dsh-host command line in the pages' code: a
// token that is dsh-host (or a path ending in /dsh-host), then its
// subcommand and flags up to the end of the command (a pipe into
// another program, a redirection, ;, &&, a comment). subs is the set of
// subcommands; a lower-case word after dsh-host that is not one is
// returned with sub "?"+word so that a made-up subcommand is caught too.
func commands(p page, subs map[string]bool) []command {
	var out []command
	p.walk(func(int, string) {}, func(line int, l string) {
		toks := shellWords(l)
		for i := 0; i < len(toks); i++ {
			if toks[i].quoted || !(toks[i].s == "dsh-host" || strings.HasSuffix(toks[i].s, "/dsh-host")) {
				continue
			}
			c := command{where: fmt.Sprintf("%s:%d", p.path, line), sub: "run"}
			j := i + 1
			if j < len(toks) && !toks[j].quoted {
				w := strings.Trim(toks[j].s, "[]")
				switch {
				case subs[w]:
					c.sub = w
					j++
				case wordRE.MatchString(w):
					c.sub = "?" + w
					j++
				case !strings.HasPrefix(w, "-"):
					continue // a placeholder, <subcommand>, or prose
				}
			}
		args:
			for ; j < len(toks); j++ {
				t := toks[j]
				if t.quoted {
					continue
				}
				s := t.s
				switch {
				case s == "|":
					// A synopsis's alternative (--stdio | --http) goes on;
					// a pipe into another program ends the command.
					if j+1 < len(toks) && strings.HasPrefix(strings.TrimLeft(toks[j+1].s, "[("), "-") {
						continue
					}
					break args
				case s == "--":
					break args // what follows is another program's (add NAME -- COMMAND ARGS)
				case s == ";" || s == "&&" || s == "||" || s == "&" || strings.HasPrefix(s, ">") || strings.HasPrefix(s, "<") || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "2>"):
					break args
				}
				s = strings.TrimLeft(s, "[(")
				if !strings.HasPrefix(s, "-") || s == "-" || s == "--" || s == "..." {
					continue
				}
				name := strings.TrimLeft(s, "-")
				name, _, _ = strings.Cut(name, "=")
				name = strings.TrimRight(name, "]|.,)…")
				if name == "" || !unicode.IsLetter(rune(name[0])) {
					continue // -1, -…
				}
				c.flags = append(c.flags, name)
			}
			out = append(out, c)
			i = j - 1
		}
	})
	return out
}

// wordRE is what a made-up subcommand looks like (a placeholder does not).
var wordRE = regexp.MustCompile(`^[a-z][a-z-]*$`)

type word struct {
	s      string
	quoted bool // had quotes: an argument, never a flag
}

// shellWords splits a line as a shell would, roughly: on blanks, with
// '…' and "…" held together.
func shellWords(l string) []word {
	var out []word
	var cur strings.Builder
	quoted, in := false, false
	var q rune
	flush := func() {
		if in {
			out = append(out, word{cur.String(), quoted})
		}
		cur.Reset()
		quoted, in = false, false
	}
	for _, r := range l {
		switch {
		case q != 0:
			if r == q {
				q = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			q, quoted, in = r, true, true
		case r == ' ' || r == '\t':
			flush()
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	flush()
	return out
}

// checkFlags returns a problem for each command of the pages whose
// subcommand does not exist or that shows a flag its subcommand lacks.
// flagsOf returns a subcommand's flag names.
func checkFlags(paths []string, subs map[string]bool, flagsOf func(sub string) (map[string]bool, error)) []string {
	var probs []string
	cache := map[string]map[string]bool{}
	for _, path := range paths {
		p, err := readPage(path)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		for _, c := range commands(p, subs) {
			if strings.HasPrefix(c.sub, "?") {
				probs = append(probs, fmt.Sprintf("%s: dsh-host has no subcommand %q", c.where, c.sub[1:]))
				continue
			}
			fs, ok := cache[c.sub]
			if !ok {
				if fs, err = flagsOf(c.sub); err != nil {
					probs = append(probs, fmt.Sprintf("%s: %v", c.where, err))
					continue
				}
				cache[c.sub] = fs
			}
			for _, f := range c.flags {
				if !fs[f] && f != "h" && f != "help" && !(c.sub == "run" && f == "version") {
					probs = append(probs, fmt.Sprintf("%s: dsh-host %s has no flag -%s", c.where, c.sub, f))
				}
			}
		}
	}
	return probs
}

// helpFlags parses a subcommand's -h output (the flag package's
// PrintDefaults, after a "Flags:" line) into its flag names.
func helpFlags(help string) map[string]bool {
	out := map[string]bool{}
	in := false
	re := regexp.MustCompile(`^\s{1,4}-([A-Za-z][\w.-]*)`)
	for _, l := range strings.Split(help, "\n") {
		if strings.TrimSpace(l) == "Flags:" {
			in = true
			continue
		}
		if m := re.FindStringSubmatch(l); in && m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// helpSubcommands parses `dsh-host -h` into the subcommands' names.
func helpSubcommands(help string) map[string]bool {
	out := map[string]bool{}
	in := false
	re := regexp.MustCompile(`^  ([a-z][a-z-]*)\s`)
	for _, l := range strings.Split(help, "\n") {
		if strings.TrimSpace(l) == "Subcommands:" {
			in = true
			continue
		}
		if m := re.FindStringSubmatch(l); in && m != nil {
			out[m[1]] = true
		}
	}
	return out
}

func sorted(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}
