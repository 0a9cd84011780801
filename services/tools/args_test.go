package tools_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestDecodeArgs: numbers as written (an int64 when an integer fits, a
// float64 else, the largest of its sign beyond range); a key twice,
// escaped or not, invalid UTF-8, anything but one object, or deep nesting
// refused, naming where.
func TestDecodeArgs(t *testing.T) {
	for _, c := range []struct {
		args string
		want map[string]any
		err  string
	}{
		{``, map[string]any{}, ""},
		{` {"a":1,"b":-2.5,"c":9007199254740993,"d":1e400,"e":-1e400,"f":1e-400,"g":99999999999999999999} `, map[string]any{
			"a": int64(1), "b": -2.5, "c": int64(9007199254740993), "d": math.MaxFloat64, "e": -math.MaxFloat64, "f": 0.0, "g": 1e20}, ""},
		{`{"s":"a\"b\u00e9","t":true,"n":null,"l":[1,{"x":[]}],"o":{}}`, map[string]any{
			"s": "a\"bé", "t": true, "n": nil, "l": []any{int64(1), map[string]any{"x": []any{}}}, "o": map[string]any{}}, ""},
		{`{"path":"/tmp","path":"/etc"}`, nil, `arguments has the key "path" twice`},
		{`{"path":"/tmp","\u0070ath":"/etc"}`, nil, `arguments has the key "path" twice`},
		{`{"a":{"b":[0,{"c":1,"c":2}]}}`, nil, `arguments.a.b[1] has the key "c" twice`},
		{"{\"a\":\"\xff\"}", nil, "not valid UTF-8"},
		{`{"a":{"b":"x\ud800"}}`, nil, "arguments.a.b has a string with a lone UTF-16 surrogate escape"},
		{`{"a":"\uFFFD\ud83d\ude00�"}`, map[string]any{"a": "\ufffd😀\ufffd"}, ""},
		// A written U+FFFD beside a lone surrogate does not hide it.
		{`{"a":"\ufffd\ud800"}`, nil, "arguments.a has a string with a lone UTF-16 surrogate escape"},
		{`{"a":"�\udc00"}`, nil, "arguments.a has a string with a lone UTF-16 surrogate escape"},
		{`{"a":"\ud800\u0041"}`, nil, "arguments.a has a string with a lone UTF-16 surrogate escape"},
		{`{"a":1} {"b":2}`, nil, "invalid character"},
		{`{"a":1`, nil, "unexpected end of JSON input"},
		{`["a"]`, nil, "must be a JSON object"},
		{`null`, nil, "must be a JSON object"},
		{strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600), nil, "is nested deeper than 512"},
	} {
		got, err := tools.DecodeArgs(json.RawMessage(c.args))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%.60s: err %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.args, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.args, diff)
		}
	}
}

// FuzzDecodeArgs: what DecodeArgs accepts, encoding/json reads the same
// (numbers aside, which it reads as written); a valid object without a
// key twice is accepted.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,2,{"c":"d"}]}`, `{"a":1e400}`, `{"a":"\u0061","a ":2}`, `{"a":{"a":{"a":1}}}`, `{"x":[[],{},"",0,-0.0,true,false,null]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := tools.DecodeArgs(raw)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var want map[string]any
		stdErr := dec.Decode(&want)
		if err != nil {
			if stdErr == nil && utf8.Valid(raw) && !strings.Contains(err.Error(), "twice") && !strings.Contains(err.Error(), "surrogate") && !strings.Contains(err.Error(), "nested") && !strings.Contains(err.Error(), "one JSON value") && !strings.Contains(err.Error(), "invalid character") && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
				t.Fatalf("%q: refused (%v), encoding/json reads it", raw, err)
			}
			return
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			return
		}
		if stdErr != nil {
			t.Fatalf("%q: accepted, encoding/json refuses it: %v", raw, stdErr)
		}
		if diff := cmp.Diff(asFloats(want), asFloats(got)); diff != "" {
			t.Fatalf("%q: read otherwise than encoding/json (-std +ours):\n%s", raw, diff)
		}
	})
}

// asFloats turns every number of v into a float64 (json.Number as
// strconv would, clamped as DecodeArgs clamps).
func asFloats(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = asFloats(e)
		}
		return out
	case []any:
		out := []any{}
		for _, e := range x {
			out = append(out, asFloats(e))
		}
		return out
	case json.Number:
		var f float64
		if err := json.Unmarshal([]byte(x), &f); err != nil {
			if strings.HasPrefix(string(x), "-") {
				return -math.MaxFloat64
			}
			return math.MaxFloat64
		}
		return f
	case int64:
		return float64(x)
	}
	return v
}
