package mcpfold

import (
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/internal/editdist"
)

// collapse folds every run of whitespace into one space and trims the ends.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate collapses whitespace and, when the result is longer than limit
// characters, keeps limit-1 of them and appends "…". It counts and cuts
// whole characters, never bytes of one.
func truncate(s string, limit int) string {
	s = collapse(s)
	if limit < 1 || utf8.RuneCountInString(s) <= limit {
		return s
	}
	n := 0
	for i := range s {
		if n == limit-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// tokenize splits text into lowercase search terms: on every character that
// is not a letter or digit (so `_`, `-` and spaces), on camelCase
// boundaries (createIssue, HTTPServer), and into single characters for
// scripts written without spaces (Han, kana, Hangul). Plural "s" is
// stripped so "issues" finds "issue".
func tokenize(text string) []string {
	var out []string
	emit := func(w string) {
		if w == "" {
			return
		}
		w = strings.ToLower(w)
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out = append(out, w)
	}
	var word []rune
	flush := func() {
		if len(word) == 0 {
			return
		}
		// An acronym's plural ("PRs", "URLs") is the acronym.
		if n := len(word); n >= 3 && word[n-1] == 's' && allUpper(word[:n-1]) {
			word = word[:n-1]
		}
		start := 0
		for i := 1; i < len(word); i++ {
			prev, cur := word[i-1], word[i]
			lowerToUpper := (unicode.IsLower(prev) || unicode.IsDigit(prev)) && unicode.IsUpper(cur)
			acronymEnd := unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(word) && unicode.IsLower(word[i+1])
			if lowerToUpper || acronymEnd {
				emit(string(word[start:i]))
				start = i
			}
		}
		emit(string(word[start:]))
		word = word[:0]
	}
	for _, r := range text {
		switch {
		case r < utf8.RuneSelf:
			// ASCII fast path: most names and descriptions.
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				word = append(word, r)
			} else {
				flush()
			}
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word = append(word, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// searchDoc is one tool in a search index.
type searchDoc struct {
	name string
	tf   map[string]int
	len  int
}

// hit is one ranked search result.
type hit struct {
	index int
	score float64
}

// BM25 parameters: the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// nameWeight counts a name term this many times, because a word in a tool's
// name says more about it than the same word in its description.
const nameWeight = 2

// rank scores every document against query with BM25 and returns those
// with a positive score, best first (ties by name).
func rank(docs []searchDoc, query string) []hit {
	terms := tokenize(query)
	if len(terms) == 0 || len(docs) == 0 {
		return nil
	}
	seen := map[string]bool{}
	uniq := terms[:0:0]
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			uniq = append(uniq, t)
		}
	}
	total := 0
	df := map[string]int{}
	for _, d := range docs {
		total += d.len
		for _, t := range uniq {
			if d.tf[t] > 0 {
				df[t]++
			}
		}
	}
	avg := float64(total) / float64(len(docs))
	if avg == 0 {
		avg = 1
	}
	n := float64(len(docs))
	var hits []hit
	for i, d := range docs {
		score := 0.0
		for _, t := range uniq {
			f := float64(d.tf[t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			score += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(d.len)/avg))
		}
		if score > 0 {
			hits = append(hits, hit{index: i, score: score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool {
		if hits[a].score != hits[b].score {
			return hits[a].score > hits[b].score
		}
		return docs[hits[a].index].name < docs[hits[b].index].name
	})
	return hits
}

// newDoc indexes a tool: its name without the prefix (weighted) and its
// description.
func newDoc(name, shortName, description string) searchDoc {
	d := searchDoc{name: name, tf: map[string]int{}}
	for _, t := range tokenize(shortName) {
		d.tf[t] += nameWeight
		d.len += nameWeight
	}
	for _, t := range tokenize(description) {
		d.tf[t]++
		d.len++
	}
	return d
}

// suggest returns up to three of candidates closest to name: by edit
// distance, with shared name tokens pulling a candidate closer, so both a
// typo ("creat_issue") and a wrong server ("mcp__gh__create_issue") find
// the right tool.
func suggest(name string, candidates []string) []string {
	type scored struct {
		name  string
		score int
	}
	want := map[string]bool{}
	for _, t := range tokenize(name) {
		want[t] = true
	}
	budget := max(3, utf8.RuneCountInString(name)/3)
	var out []scored
	for _, c := range candidates {
		d := editdist.Levenshtein(name, c)
		shared := 0
		for _, t := range uniqueTokens(c) {
			if want[t] {
				shared++
			}
		}
		if d > budget && shared < 2 {
			continue
		}
		out = append(out, scored{c, d - 3*shared})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score < out[j].score
		}
		return out[i].name < out[j].name
	})
	names := make([]string, 0, 3)
	for i := 0; i < len(out) && i < 3; i++ {
		names = append(names, out[i].name)
	}
	return names
}

func uniqueTokens(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tokenize(s) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func allUpper(rs []rune) bool {
	for _, r := range rs {
		if !unicode.IsUpper(r) {
			return false
		}
	}
	return true
}
