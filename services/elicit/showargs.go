package elicit

import "encoding/json"

// ShowArgs renders a call's arguments for a person on one line, as an
// approval shows them (the policy's, the agent's sampling requests, the
// console): compact JSON with every string value longer than 60
// characters cut, the whole cut to max characters. It does not escape
// terminal codes: the front end does (JSON has escaped the control
// characters already).
func ShowArgs(args json.RawMessage, max int) string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return cut(string(args), max)
	}
	b, err := json.Marshal(cutStrings(v, 60))
	if err != nil {
		return cut(string(args), max)
	}
	return cut(string(b), max)
}

func cutStrings(v any, max int) any {
	switch x := v.(type) {
	case string:
		return cut(x, max)
	case []any:
		for i := range x {
			x[i] = cutStrings(x[i], max)
		}
	case map[string]any:
		for k := range x {
			x[k] = cutStrings(x[k], max)
		}
	}
	return v
}

func cut(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max-1]) + "…"
}
