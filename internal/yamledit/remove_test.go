package yamledit

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

const removeDoc = `# top
plugins:
  # first
  - id: a
    name: x

  # b's comment
  # on two lines
  - id: b
    name: x
    config:
      args: [1, 2]
  # a comment about c, apart
  - id: c
    name: x
  # trailing, about what follows

other: 1
`

func TestRemoveItem(t *testing.T) {
	f, err := Parse([]byte(removeDoc))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		i    int
		want string
	}{
		{0, strings.Replace(removeDoc, "  # first\n  - id: a\n    name: x\n", "", 1)},
		{1, strings.Replace(removeDoc, "  # b's comment\n  # on two lines\n  - id: b\n    name: x\n    config:\n      args: [1, 2]\n", "", 1)},
		{2, strings.Replace(removeDoc, "  # a comment about c, apart\n  - id: c\n    name: x\n", "", 1)},
	}
	for _, tc := range cases {
		out, err := f.RemoveItem("plugins", tc.i)
		if err != nil {
			t.Fatalf("remove %d: %v", tc.i, err)
		}
		if string(out) != tc.want {
			t.Errorf("remove %d:\n%s\nwant:\n%s", tc.i, out, tc.want)
		}
	}
	if _, err := f.RemoveItem("plugins", 3); err == nil {
		t.Error("item 3 removed")
	}
	if _, err := f.RemoveItem("other", 0); err == nil {
		t.Error("removed from a scalar")
	}
}

// TestRemoveAppendRoundTrip: removing an item Append added gives back the
// original bytes.
func TestRemoveAppendRoundTrip(t *testing.T) {
	f, _ := Parse([]byte(removeDoc))
	var item yaml.Node
	if err := item.Encode(map[string]any{"id": "d", "name": "x"}); err != nil {
		t.Fatal(err)
	}
	item.HeadComment = "added"
	out, err := f.Append("plugins", []*yaml.Node{&item})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := Parse(out)
	back, err := g.RemoveItem("plugins", 3)
	if err != nil || string(back) != removeDoc {
		t.Errorf("round trip: %v\n%s", err, back)
	}
}

func TestRemoveLastAndFlow(t *testing.T) {
	f, _ := Parse([]byte("# c\nplugins:\n  - id: a\nx: 1\n"))
	out, err := f.RemoveItem("plugins", 0)
	if err != nil || string(out) != "# c\nplugins: []\nx: 1\n" {
		t.Errorf("remove the only item: %q, %v", out, err)
	}
	f, _ = Parse([]byte("plugins: [{id: a}, {id: b}]\n"))
	if _, err := f.RemoveItem("plugins", 0); err == nil || !strings.Contains(err.Error(), "flow list") {
		t.Errorf("flow list: %v", err)
	}
}
