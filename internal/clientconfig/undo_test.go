package clientconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// clientWrites changes text as the client (or its user) would: a new
// top-level setting first, and another server's command edited.
func clientWrites(t *testing.T, client string, text []byte) []byte {
	t.Helper()
	s := string(text)
	if client == "codex" {
		s = "notify = [\"say\", \"done\"]\n" + s
	} else {
		if !strings.HasPrefix(s, "{\n") {
			t.Fatalf("seed of %s does not begin with {", client)
		}
		s = "{\n  \"lastSessionId\": \"s-42\",\n" + s[2:]
	}
	if !strings.Contains(s, fixtureCmd) {
		t.Fatalf("no fixture server in:\n%s", s)
	}
	return []byte(strings.Replace(s, fixtureCmd, fixtureCmd+"-v2", 1))
}

// withOldEntry returns the seed of client with a dsh-host entry of an
// older install under name.
func withOldEntry(t *testing.T, client, name string, text []byte) []byte {
	t.Helper()
	c, _ := findClient(client)
	return withEntry(t, client, name, text, c.entry(Target{Executable: "/old/bin/dsh-host", Composition: "/old/composition.yml"}, 0))
}

// withEntry returns text with entry set under name, written by the
// package's own editors.
func withEntry(t *testing.T, client, name string, text []byte, entry ordered) []byte {
	t.Helper()
	c, _ := findClient(client)
	if c.format == formatTOML {
		out, err := tomlSetServer(text, name, []ttable{{path: []string{"mcp_servers", name}, keys: entry}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	root, err := parseJSON(text, true)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := decodeJSON(text, root)
	out, err := setMember(text, root, c.list(doc), name, entry)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func undoPlan(t *testing.T, o Options) *Plan {
	t.Helper()
	p, err := Undo(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUndoKeepsTheClientsChanges: after connect, the client writes its
// file (a new setting, another server edited); undo takes out connect's
// entry, or sets back the older dsh-host entry it replaced, and leaves
// every byte the client wrote: the file is the client's change made on
// the file before connect.
func TestUndoKeepsTheClientsChanges(t *testing.T) {
	for _, client := range Clients() {
		for _, replaced := range []bool{false, true} {
			name := client
			if replaced {
				name += "/replaced"
			}
			t.Run(name, func(t *testing.T) {
				o, file, orig := setup(t, client, fixtureCmd)
				if replaced {
					orig = withOldEntry(t, client, DefaultName, orig)
					writeText(t, file, string(orig))
				}
				connect(t, o)
				writeText(t, file, string(clientWrites(t, client, read(t, file))))
				p := undoPlan(t, o)
				want := clientWrites(t, client, orig)
				if got := read(t, file); !bytes.Equal(got, want) {
					t.Fatalf("after undo:\n%s\nwant:\n%s\ndiff shown:\n%s", got, want, p.Diff())
				}
				if !strings.Contains(strings.Join(p.Notes, "\n"), "undo takes out only connect's change") {
					t.Errorf("notes %v", p.Notes)
				}
				if !strings.Contains(p.Summary(), "kept") {
					t.Errorf("summary %q", p.Summary())
				}
				if _, err := Undo(o); err == nil || !strings.Contains(err.Error(), "no backup") {
					t.Errorf("a second undo: %v", err)
				}
			})
		}
	}
}

// TestUndoPutsMovedServersBack: after connect --move and a client's
// write, undo takes dsh-host's entry out and puts the moved server back
// from the backup, keeping the client's write; the composition goes back
// as --move found it.
func TestUndoPutsMovedServersBack(t *testing.T) {
	for _, client := range Clients() {
		t.Run(client, func(t *testing.T) {
			o, file, orig := setup(t, client, fixtureCmd)
			o.Move = true
			compOrig := read(t, o.Target.Composition)
			connect(t, o)
			// The client's write: a new top-level setting (the fixture
			// server is in the composition now, not here).
			cur := string(read(t, file))
			if client == "codex" {
				cur = "notify = [\"say\"]\n" + cur
			} else {
				cur = "{\n  \"lastSessionId\": \"s-42\",\n" + cur[2:]
			}
			writeText(t, file, cur)
			undoPlan(t, o)
			got := read(t, file)
			if !bytes.Contains(got, []byte("s-42")) && !bytes.Contains(got, []byte(`notify = ["say"]`)) {
				t.Fatalf("the client's setting is gone:\n%s", got)
			}
			if e := entryOf(t, client, got, DefaultName); e != nil {
				t.Fatalf("dsh-host's entry is still there:\n%s", got)
			}
			if e, want := entryOf(t, client, got, "fixture"), entryOf(t, client, orig, "fixture"); !reflect.DeepEqual(e, want) {
				t.Fatalf("the moved server is %v, want %v:\n%s", e, want, got)
			}
			if !bytes.Equal(read(t, o.Target.Composition), compOrig) {
				t.Errorf("the composition is not back:\n%s", read(t, o.Target.Composition))
			}
		})
	}
}

// TestUndoLeavesTheUsersOwnEntry: an entry the user put in place of
// connect's, under its name, is not connect's to take out: undo leaves it
// and says so, and still takes back the rest of connect's change.
func TestUndoLeavesTheUsersOwnEntry(t *testing.T) {
	for _, client := range []string{"cursor", "codex", "opencode"} {
		t.Run(client, func(t *testing.T) {
			o, file, _ := setup(t, client, fixtureCmd)
			connect(t, o)
			mine := ordered{{"command", "/usr/bin/dsh-shell-mcp"}, {"args", []string{"--mine"}}}
			writeText(t, file, string(withEntry(t, client, DefaultName, read(t, file), mine)))
			before := read(t, file)
			p := undoPlan(t, o)
			if got := read(t, file); !bytes.Equal(got, before) {
				t.Fatalf("the user's entry was touched:\n%s\nwas:\n%s", got, before)
			}
			if !strings.Contains(strings.Join(p.Notes, "\n"), `the entry "dsh" is no longer the one connect wrote`) {
				t.Errorf("notes %v", p.Notes)
			}
		})
	}
}

// TestUndoLeavesAMovedServerThereAgain: a server --move took out that the
// user (or the client) put back since, under that name, stays as it is
// now; the backup's does not replace it.
func TestUndoLeavesAMovedServerThereAgain(t *testing.T) {
	for _, client := range []string{"claude-code", "codex"} {
		t.Run(client, func(t *testing.T) {
			o, file, _ := setup(t, client, fixtureCmd)
			o.Move = true
			connect(t, o)
			again := ordered{{"command", "/usr/local/bin/fixture-mcp-v3"}, {"args", []string{}}}
			writeText(t, file, string(withEntry(t, client, "fixture", read(t, file), again)))
			undoPlan(t, o)
			got := read(t, file)
			if e := entryOf(t, client, got, "fixture"); e == nil || e["command"] != "/usr/local/bin/fixture-mcp-v3" {
				t.Fatalf("fixture is %v:\n%s", e, got)
			}
			if entryOf(t, client, got, DefaultName) != nil {
				t.Fatalf("dsh-host's entry is still there:\n%s", got)
			}
		})
	}
}

// TestUndoOfAnHTTPEntry: an entry that reaches a gateway does not start
// dsh-host serve; undo knows it as connect's by what connect wrote, and
// leaves it once the user changed it.
func TestUndoOfAnHTTPEntry(t *testing.T) {
	for _, client := range []string{"claude-code", "codex", "opencode"} {
		for _, edited := range []bool{false, true} {
			o, file, orig := setup(t, client, fixtureCmd)
			o.Target = Target{URL: "http://127.0.0.1:8931/mcp", TokenEnv: "DSH_TOKEN"}
			connect(t, o)
			cur := clientWrites(t, client, read(t, file))
			if edited {
				cur = bytes.Replace(cur, []byte("127.0.0.1:8931"), []byte("gw.example:443"), 1)
			}
			writeText(t, file, string(cur))
			p := undoPlan(t, o)
			got := read(t, file)
			if !edited && !bytes.Equal(got, clientWrites(t, client, orig)) {
				t.Fatalf("%s after undo:\n%s", client, got)
			}
			if edited && (!bytes.Equal(got, cur) || !strings.Contains(strings.Join(p.Notes, "\n"), "no longer the one connect wrote")) {
				t.Fatalf("%s: the user's edited entry: notes %v\n%s", client, p.Notes, got)
			}
		}
	}
}

// TestUndoAfterAReconnect: connect, the client writes, connect again (to
// another composition): undo takes out the entry and keeps the client's
// write, instead of restoring a backup retaken with the first entry in it.
func TestUndoAfterAReconnect(t *testing.T) {
	for _, client := range []string{"gemini", "codex"} {
		t.Run(client, func(t *testing.T) {
			o, file, orig := setup(t, client, fixtureCmd)
			connect(t, o)
			writeText(t, file, string(clientWrites(t, client, read(t, file))))
			o.Target.Composition = strings.TrimSuffix(o.Target.Composition, "composition.yml") + "other.yml"
			connect(t, o)
			undoPlan(t, o)
			if got, want := read(t, file), clientWrites(t, client, orig); !bytes.Equal(got, want) {
				t.Fatalf("after undo:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestUndoOfACreatedFileTheClientWrote: a file connect created and the
// client wrote since is the client's now: undo takes the entry out of it
// instead of removing it.
func TestUndoOfACreatedFileTheClientWrote(t *testing.T) {
	o, file, _ := setup(t, "gemini", fixtureCmd)
	os.Remove(file)
	connect(t, o)
	cur := "{\n  \"theme\": \"GitHub\",\n" + string(read(t, file))[2:]
	writeText(t, file, cur)
	p := undoPlan(t, o)
	got := read(t, file)
	if p.Remove || !bytes.Contains(got, []byte(`"theme": "GitHub"`)) || entryOf(t, "gemini", got, DefaultName) != nil {
		t.Fatalf("after undo:\n%s", got)
	}
}

// TestUndoChangedMeanwhile: a client that writes its file between undo's
// diff and its write is not overwritten.
func TestUndoChangedMeanwhile(t *testing.T) {
	o, file, _ := setup(t, "claude-code", fixtureCmd)
	connect(t, o)
	p, err := Undo(o)
	if err != nil {
		t.Fatal(err)
	}
	changed := string(clientWrites(t, "claude-code", read(t, file)))
	writeText(t, file, changed)
	if err := p.Apply(); err == nil || !strings.Contains(err.Error(), "changed while connect --undo ran") {
		t.Fatalf("err = %v", err)
	}
	if string(read(t, file)) != changed {
		t.Fatal("the client's write was lost")
	}
	// Asked again, undo takes out the entry from what is there now.
	undoPlan(t, o)
	if got := read(t, file); !bytes.Contains(got, []byte("s-42")) || entryOf(t, "claude-code", got, DefaultName) != nil {
		t.Fatalf("after undo:\n%s", got)
	}
}

// TestUndoRefusesAFileItCannotRead: a file that no longer parses is left
// as it is, the error naming its line.
func TestUndoRefusesAFileItCannotRead(t *testing.T) {
	o, file, _ := setup(t, "cursor", fixtureCmd)
	connect(t, o)
	broken := string(read(t, file)) + "}\n"
	writeText(t, file, broken)
	if _, err := Undo(o); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("err = %v", err)
	}
	if string(read(t, file)) != broken {
		t.Fatal("the file changed")
	}
}

// TestUndoCRLF: a Windows file the client wrote since connect keeps its
// CRLF endings, the moved server put back with them.
func TestUndoCRLF(t *testing.T) {
	for _, client := range []string{"cursor", "codex"} {
		t.Run(client, func(t *testing.T) {
			o, file, orig := setup(t, client, fixtureCmd)
			crlf := bytes.ReplaceAll(orig, []byte("\n"), []byte("\r\n"))
			writeText(t, file, string(crlf))
			o.Move = true
			connect(t, o)
			cur := read(t, file)
			if client == "codex" {
				cur = append([]byte("notify = 1\r\n"), cur...)
			} else {
				cur = append([]byte("{\r\n  \"lastSessionId\": \"s-42\","), cur[1:]...)
			}
			writeText(t, file, string(cur))
			undoPlan(t, o)
			got := read(t, file)
			if bytes.Count(got, []byte("\n")) != bytes.Count(got, []byte("\r\n")) {
				t.Fatalf("mixed line endings: %q", got)
			}
			if entryOf(t, client, got, "fixture") == nil || entryOf(t, client, got, DefaultName) != nil || !bytes.Contains(got, cur[:12]) {
				t.Fatalf("after undo: %q", got)
			}
		})
	}
}

// TestUndoSetsBackAReplacedEntryTheUserRemoved: the older dsh-host entry
// connect replaced comes back even when the user took connect's out by
// hand since: undo gives back what connect took, where nothing of the
// user's is in its place.
func TestUndoSetsBackAReplacedEntryTheUserRemoved(t *testing.T) {
	o, file, orig := setup(t, "cursor", fixtureCmd)
	orig = withOldEntry(t, "cursor", DefaultName, orig)
	writeText(t, file, string(orig))
	connect(t, o)
	text := read(t, file)
	root, err := parseJSON(text, false)
	if err != nil {
		t.Fatal(err)
	}
	if text, err = deleteMember(text, root, []string{"mcpServers"}, DefaultName); err != nil {
		t.Fatal(err)
	}
	writeText(t, file, string(text))
	undoPlan(t, o)
	if got := read(t, file); !bytes.Equal(got, orig) {
		t.Fatalf("after undo:\n%s\nwant:\n%s", got, orig)
	}
}

// TestUndoLFNow: a server moved out of a CRLF file comes back with the
// LF endings the client writes the file with now.
func TestUndoLFNow(t *testing.T) {
	o, file, orig := setup(t, "cursor", fixtureCmd)
	writeText(t, file, string(bytes.ReplaceAll(orig, []byte("\n"), []byte("\r\n"))))
	o.Move = true
	connect(t, o)
	lf := bytes.ReplaceAll(read(t, file), []byte("\r\n"), []byte("\n"))
	writeText(t, file, "{\n  \"lastSessionId\": \"s-42\","+string(lf[1:]))
	undoPlan(t, o)
	if got := read(t, file); bytes.Contains(got, []byte("\r")) || entryOf(t, "cursor", got, "fixture") == nil {
		t.Fatalf("after undo: %q", got)
	}
}

// TestUndoAfterTwoMoves: connect --move, the user adds a server to the
// client, connect --move again (it moves that one too): undo puts both
// servers back into the client, the second as it was when moved (it is
// not in the first connect's backup), keeps the client's write, and the
// composition goes back to before the first move.
func TestUndoAfterTwoMoves(t *testing.T) {
	for _, client := range []string{"claude-code", "codex", "opencode"} {
		t.Run(client, func(t *testing.T) {
			o, file, orig := setup(t, client, fixtureCmd)
			o.Move = true
			compOrig := read(t, o.Target.Composition)
			connect(t, o)
			second := ordered{{"command", "/usr/local/bin/second-mcp"}, {"args", []string{"--x"}}}
			if client == "opencode" {
				second = ordered{{"type", "local"}, {"command", []string{"/usr/local/bin/second-mcp", "--x"}}, {"enabled", true}}
			}
			cur := withEntry(t, client, "second", read(t, file), second)
			if client == "codex" {
				cur = append([]byte("notify = 1\n"), cur...)
			} else {
				cur = append([]byte("{\n  \"lastSessionId\": \"s-42\","), cur[1:]...)
			}
			writeText(t, file, string(cur))
			if p := connect(t, o); len(p.Moved) != 1 || p.Moved[0] != "second" {
				t.Fatalf("the second connect moved %v; notes %v", p.Moved, p.Notes)
			}
			undoPlan(t, o)
			got := read(t, file)
			if !bytes.Contains(got, cur[:12]) || entryOf(t, client, got, DefaultName) != nil {
				t.Fatalf("after undo:\n%s", got)
			}
			if e, want := entryOf(t, client, got, "fixture"), entryOf(t, client, orig, "fixture"); !reflect.DeepEqual(e, want) {
				t.Errorf("fixture is %v, want %v:\n%s", e, want, got)
			}
			if e, want := entryOf(t, client, got, "second"), entryOf(t, client, cur, "second"); e == nil || !reflect.DeepEqual(e, want) {
				t.Errorf("second is %v, want %v:\n%s", e, want, got)
			}
			if c := read(t, o.Target.Composition); !bytes.Equal(c, compOrig) {
				t.Errorf("the composition is not back:\n%s", c)
			}
		})
	}
}

// TestUndoOfAnOlderRecord: a backup an older dsh-host wrote (no entries,
// replaced or moved servers in it) still undoes a changed file: the entry
// it names goes, the older entry it replaced comes back from the backup,
// and a note says that the moved servers are not known.
func TestUndoOfAnOlderRecord(t *testing.T) {
	o, file, orig := setup(t, "cursor", fixtureCmd)
	orig = withOldEntry(t, "cursor", DefaultName, orig)
	writeText(t, file, string(orig))
	o.Move = true
	connect(t, o)
	recFile := recordPath(o.StateDir, "cursor", file)
	rec, err := loadRecord(recFile)
	if err != nil {
		t.Fatal(err)
	}
	rec.Entries, rec.Replaced, rec.Moved = nil, nil, nil
	data, _ := json.Marshal(rec)
	writeText(t, recFile, string(data))
	writeText(t, file, "{\n  \"lastSessionId\": \"s-42\","+string(read(t, file)[1:]))
	p := undoPlan(t, o)
	got := read(t, file)
	if e, want := entryOf(t, "cursor", got, DefaultName), entryOf(t, "cursor", orig, DefaultName); !reflect.DeepEqual(e, want) || !bytes.Contains(got, []byte("s-42")) {
		t.Fatalf("after undo (dsh %v, want %v):\n%s", e, want, got)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "does not say which servers --move took") {
		t.Errorf("notes %v", p.Notes)
	}
}
