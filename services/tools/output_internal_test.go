package tools

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestJSONFormNeedsNoRoundTrip: a value isJSONForm accepts is exactly what
// its encoding decodes to, and every value it refuses would change (or
// fail) in the round trip.
func TestJSONFormNeedsNoRoundTrip(t *testing.T) {
	accepted := []any{
		nil, true, "x", "é<&>", 1.5, -0.0, 1e300, []any{}, map[string]any{},
		map[string]any{"a": []any{1.0, "b", nil, map[string]any{"c": false}}},
	}
	for _, v := range accepted {
		if !isJSONForm(v, 0) {
			t.Errorf("isJSONForm(%#v) = false", v)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Errorf("%#v round-trips to %#v", v, back)
		}
	}
	refused := []any{
		[]any(nil), map[string]any(nil), "\xff", map[string]any{"\xff": 1.0}, math.NaN(), math.Inf(1),
		1, int64(1), float32(1), json.RawMessage(`{}`), json.Number("1"), struct{}{}, []string{}, map[string]int{},
		map[string]any{"a": []any{1}},
	}
	for _, v := range refused {
		if isJSONForm(v, 0) {
			t.Errorf("isJSONForm(%#v) = true, want the round trip", v)
		}
	}
	deep := any(1.0)
	for range maxJSONFormDepth + 2 {
		deep = []any{deep}
	}
	if isJSONForm(deep, 0) {
		t.Error("a value nested past maxJSONFormDepth must take the round trip")
	}
}
