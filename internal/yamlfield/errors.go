package yamlfield

import (
	"errors"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Problem is one problem a yaml.v3 error reports.
type Problem struct {
	Line int // 1-based; 0 when yaml gave none
	Msg  string
}

// Problems splits a yaml.v3 error into its problems, each without yaml's
// "yaml: " and "line N: " prefixes. yaml.v3 writes a parse error as
// "yaml: line N: msg" (or "yaml: msg") and a decoding error (*TypeError,
// wrapped or as text) as "yaml: unmarshal errors:\n  line N: msg\n  ...".
// Another error is one problem without a line.
func Problems(err error) []Problem {
	if err == nil {
		return nil
	}
	var te *yamlv3.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		out := make([]Problem, len(te.Errors))
		for i, e := range te.Errors {
			out[i] = splitLine(e)
		}
		return out
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "yaml: unmarshal errors:\n"); ok {
		var out []Problem
		for l := range strings.SplitSeq(rest, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, splitLine(l))
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return []Problem{splitLine(strings.TrimPrefix(msg, "yaml: "))}
}

// ErrorLine returns the line of err's first problem (0 when it has none)
// and its message without yaml's prefixes; further problems follow, each
// with its line.
func ErrorLine(err error) (line int, msg string) {
	ps := Problems(err)
	if len(ps) == 0 {
		return 0, ""
	}
	var b strings.Builder
	b.WriteString(ps[0].Msg)
	for _, p := range ps[1:] {
		b.WriteString("; ")
		if p.Line > 0 {
			b.WriteString("line " + strconv.Itoa(p.Line) + ": ")
		}
		b.WriteString(p.Msg)
	}
	return ps[0].Line, b.String()
}

// splitLine splits "line N: msg".
func splitLine(s string) Problem {
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if num, msg, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil && n >= 0 {
				return Problem{Line: n, Msg: msg}
			}
		}
	}
	return Problem{Msg: s}
}
