package clientconfig

import (
	"strings"
	"testing"
)

// TestSetMember: the entry goes in, in the object's own style, and every
// other byte stays.
func TestSetMember(t *testing.T) {
	v := ordered{{"command", "x"}}
	tests := []struct{ name, in, want string }{
		{"empty file object", "{}", "{\n  \"s\": {\n    \"d\": {\n      \"command\": \"x\"\n    }\n  }\n}"},
		{"empty list", "{\n  \"s\": {}\n}\n", "{\n  \"s\": {\n    \"d\": {\n      \"command\": \"x\"\n    }\n  }\n}\n"},
		{"one line", "{\"s\": {\"a\": 1}}", "{\"s\": {\"a\": 1, \"d\": {\"command\": \"x\"}}}"},
		{"one line, trailing comma", "{\"s\": {\"a\": 1,}}", "{\"s\": {\"a\": 1, \"d\": {\"command\": \"x\"},}}"},
		{"after a line comment", "{\n  \"s\": {\n    \"a\": 1 // one\n  }\n}", "{\n  \"s\": {\n    \"a\": 1, // one\n    \"d\": {\n      \"command\": \"x\"\n    }\n  }\n}"},
		{"trailing comma", "{\n  \"s\": {\n    \"a\": 1,\n  },\n}", "{\n  \"s\": {\n    \"a\": 1,\n    \"d\": {\n      \"command\": \"x\"\n    },\n  },\n}"},
		{"tabs", "{\n\t\"s\": {\n\t\t\"a\": 1\n\t}\n}", "{\n\t\"s\": {\n\t\t\"a\": 1,\n\t\t\"d\": {\n\t\t\t\"command\": \"x\"\n\t\t}\n\t}\n}"},
		{"replace", "{\n  \"s\": {\n    \"d\": {\"old\": true}, /* keep */\n    \"e\": 2\n  }\n}", "{\n  \"s\": {\n    \"d\": {\n      \"command\": \"x\"\n    }, /* keep */\n    \"e\": 2\n  }\n}"},
		{"missing list", "{\n  \"theme\": \"x\"\n}\n", "{\n  \"theme\": \"x\",\n  \"s\": {\n    \"d\": {\n      \"command\": \"x\"\n    }\n  }\n}\n"},
		{"empty list over lines", "{\n  \"s\": {\n  }\n}\n", "{\n  \"s\": {\n    \"d\": {\n      \"command\": \"x\"\n    }\n  }\n}\n"},
		{"brace on the member's line", "{\n  \"s\": {\n    \"a\": 1}\n}", "{\n  \"s\": {\n    \"a\": 1,\n    \"d\": {\n      \"command\": \"x\"\n    }}\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := parseJSON([]byte(tt.in), true)
			if err != nil {
				t.Fatal(err)
			}
			out, err := setMember([]byte(tt.in), root, []string{"s"}, "d", v)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, tt.want)
			}
			if _, err := parseJSON(out, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDeleteMember(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"first", "{\"s\": {\n  \"b\": 2,\n  \"a\": 1\n}}", "{\"s\": {\n  \"a\": 1\n}}"},
		{"last", "{\"s\": {\n  \"a\": 1,\n  \"b\": 2\n}}", "{\"s\": {\n  \"a\": 1\n}}"},
		{"only", "{\"s\": {\n  \"b\": 2\n}}", "{\"s\": {\n}}"},
		{"one line first", "{\"s\": {\"b\": 2, \"a\": 1}}", "{\"s\": {\"a\": 1}}"},
		{"one line last", "{\"s\": {\"a\": 1, \"b\": 2}}", "{\"s\": {\"a\": 1}}"},
		{"with its comment", "{\"s\": {\n  \"b\": {\n    \"x\": 1\n  }, // bee\n  \"a\": 1\n}}", "{\"s\": {\n  \"a\": 1\n}}"},
		{"trailing comma kept", "{\"s\": {\n  \"a\": 1,\n  \"b\": 2,\n}}", "{\"s\": {\n  \"a\": 1,\n}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := parseJSON([]byte(tt.in), true)
			if err != nil {
				t.Fatal(err)
			}
			out, err := deleteMember([]byte(tt.in), root, []string{"s"}, "b")
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, tt.want)
			}
		})
	}
}

func TestTOMLSetServer(t *testing.T) {
	ts := []ttable{{path: []string{"mcp_servers", "d"}, keys: ordered{{"command", "x"}, {"args", []string{"a", "b"}}}}}
	tests := []struct{ name, in, want string }{
		{"empty", "", "[mcp_servers.d]\ncommand = \"x\"\nargs = [\"a\", \"b\"]\n"},
		{"no newline at the end", "model = \"o3\"", "model = \"o3\"\n\n[mcp_servers.d]\ncommand = \"x\"\nargs = [\"a\", \"b\"]\n"},
		{"replaced in place", "[mcp_servers.d]\ncommand = \"old\"\n\n[mcp_servers.d.env]\nA = \"1\"\n\n# next\n[tui]\nx = 1\n", "[mcp_servers.d]\ncommand = \"x\"\nargs = [\"a\", \"b\"]\n\n# next\n[tui]\nx = 1\n"},
		{"multi-line values are not headers", "[a]\nx = [\n[1],\n]\ns = \"\"\"\n[mcp_servers.d]\n\"\"\"\n", "[a]\nx = [\n[1],\n]\ns = \"\"\"\n[mcp_servers.d]\n\"\"\"\n\n[mcp_servers.d]\ncommand = \"x\"\nargs = [\"a\", \"b\"]\n"},
		{"quoted header", "[mcp_servers.\"d\"]\ncommand = \"old\"\n", "[mcp_servers.d]\ncommand = \"x\"\nargs = [\"a\", \"b\"]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tomlSetServer([]byte(tt.in), "d", ts)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, tt.want)
			}
			if _, err := decodeTOML(out); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCRLF: a Windows file's lines keep their endings, the new ones too.
func TestCRLF(t *testing.T) {
	o, file, _ := setup(t, "cursor", fixtureCmd)
	writeText(t, file, "{\r\n  \"mcpServers\": {}\r\n}\r\n")
	p := connect(t, o)
	if strings.Count(string(p.New), "\n") != strings.Count(string(p.New), "\r\n") {
		t.Fatalf("mixed line endings: %q", p.New)
	}
	undo(t, o)
}

func TestUnifiedDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	new := "a\nb\nc\nd\ne\nF\ng\nh\ni\nj\nk\n"
	want := "--- f\n+++ f\n@@ -3,8 +3,9 @@\n c\n d\n e\n-f\n+F\n g\n h\n i\n j\n+k\n"
	if got := unifiedDiff("f", []byte(old), []byte(new)); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	far := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	got := unifiedDiff("f", []byte(far), []byte(strings.Replace(strings.Replace(far, "1\n", "one\n", 1), "10\n", "ten\n", 1)))
	if strings.Count(got, "@@ -") != 2 {
		t.Fatalf("want two hunks:\n%s", got)
	}
}

// TestTOMLRemoveServer: a server's tables go with the comment above them;
// taken from the end of the file, the blank line that separated them goes
// too, so that adding and removing a server leaves the file as it was.
func TestTOMLRemoveServer(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"at the end", "model = \"o3\"\n\n[mcp_servers.d]\ncommand = \"x\"\n\n[mcp_servers.d.tools.t]\na = 1\n", "model = \"o3\"\n"},
		{"at the end, CRLF", "model = \"o3\"\r\n\r\n[mcp_servers.d]\r\ncommand = \"x\"\r\n", "model = \"o3\"\r\n"},
		{"in the middle", "[a]\nx = 1\n\n# d's\n[mcp_servers.d]\ncommand = \"x\"\n\n[b]\ny = 2\n", "[a]\nx = 1\n\n[b]\ny = 2\n"},
		{"alone", "[mcp_servers.d]\ncommand = \"x\"\n", ""},
		{"absent", "[a]\nx = 1\n\n", "[a]\nx = 1\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tomlSetServer([]byte(tt.in), "d", nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Fatalf("got:\n%q\nwant:\n%q", out, tt.want)
			}
		})
	}
}
