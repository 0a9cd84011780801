package sessions

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/services/attachments"
)

// sessionTurn is a turn as the loop commits it: a question, a tool call, its
// result, the answer.
func sessionTurn(i int, result string) []openai.ChatCompletionMessageParamUnion {
	asst := openai.ChatCompletionAssistantMessageParam{}
	asst.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID:       "call_" + string(rune('a'+i%26)),
		Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "mcp_call", Arguments: `{"tool":"mcp__demo__add","arguments":{"a":1,"b":2}}`},
	}}}
	answer := openai.ChatCompletionAssistantMessageParam{}
	answer.Content.OfString = openai.String("The sum is 3.\nAnything else? <é>")
	return []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("What is 1+2?\nPlease use the tool."),
		{OfAssistant: &asst},
		openai.ToolMessage(result, "call_"+string(rune('a'+i%26))),
		{OfAssistant: &answer},
	}
}

// usage stands for the agent's Usage: a session saves it as its JSON.
type usage struct{ Prompt, Completion int64 }

func marshalAll(t testing.TB, msgs []openai.ChatCompletionMessageParamUnion) string {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSessionFileModes: the conversation is private: a 0700 directory, 0600
// files, whatever the umask lets through otherwise.
func TestSessionFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s, err := New(dir, "/c.yml", "m")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(context.Background(), nil, "m", usage{}, sessionTurn(0, "3")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, s.Path: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
}

// TestSessionTornLastLine: a crash mid-write leaves a last line cut short;
// opening skips it with a warning, keeps the turns before it, and the next
// turn appends after them.
func TestSessionTornLastLine(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, "/c.yml", "m")
	if err != nil {
		t.Fatal(err)
	}
	first := sessionTurn(0, "3")
	if err := s.AppendTurn(context.Background(), nil, "m", usage{Prompt: 5}, first); err != nil {
		t.Fatal(err)
	}
	// Half of a second turn's line.
	if err := s.AppendTurn(context.Background(), nil, "m", usage{}, sessionTurn(1, "4")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path, b[:len(b)-40], 0o600); err != nil {
		t.Fatal(err)
	}
	ls, err := Open(dir, s.ID)
	if err != nil {
		t.Fatalf("a torn last line is fatal: %v", err)
	}
	if len(ls.Warnings) != 1 || !strings.Contains(ls.Warnings[0], "line 3") {
		t.Errorf("warnings = %q, want one naming line 3", ls.Warnings)
	}
	if got, want := marshalAll(t, ls.History), marshalAll(t, first); got != want {
		t.Errorf("history =\n%s\nwant\n%s", got, want)
	}
	third := sessionTurn(2, "5")
	if err := ls.AppendTurn(context.Background(), nil, "m", usage{}, third); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir, s.ID)
	if err != nil || len(again.Warnings) != 0 || again.Info.Turns != 2 {
		t.Fatalf("after a turn more: %v, warnings %q, %d turns", err, again.Warnings, again.Info.Turns)
	}
	if got, want := marshalAll(t, again.History), marshalAll(t, append(first, third...)); got != want {
		t.Errorf("history =\n%s\nwant\n%s", got, want)
	}
}

// TestSessionCorruptMiddleLine: a bad line that is not the last is not a
// crash's doing; it is an error naming the file and the line.
func TestSessionCorruptMiddleLine(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, "/c.yml", "m")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(s.Path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{not json\n")
	f.Close()
	if err := s.AppendTurn(context.Background(), nil, "m", usage{}, sessionTurn(0, "3")); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, s.ID)
	if err == nil || !strings.Contains(err.Error(), s.Path) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want one naming %s line 2", err, s.Path)
	}
}

func TestOpenSessionUnknownID(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"20990101-000000-abcdef", "../x", ""} {
		_, err := Open(dir, id)
		if err == nil || !strings.Contains(err.Error(), `"`+id+`"`) {
			t.Errorf("Open(%q) = %v, want an error naming the id", id, err)
		}
	}
}

// TestSessionsListAndLast: the list is the last updated first, with the
// first line and the turns; LastSession keeps to its composition.
func TestSessionsListAndLast(t *testing.T) {
	dir := t.TempDir()
	a1, _ := New(dir, "/a.yml", "m")
	b1, _ := New(dir, "/b.yml", "m")
	a2, _ := New(dir, "/a.yml", "m")
	for _, s := range []*Session{a2, a1, b1} { // a1 is updated after a2
		if err := s.AppendTurn(context.Background(), nil, "m", usage{}, sessionTurn(0, "3")); err != nil {
			t.Fatal(err)
		}
	}
	list, warnings, err := List(dir)
	if err != nil || len(warnings) > 0 || len(list) != 3 {
		t.Fatalf("%v, warnings %q, %d sessions", err, warnings, len(list))
	}
	if list[0].ID != b1.ID || list[1].ID != a1.ID || list[0].Turns != 1 || list[0].FirstLine != "What is 1+2?" {
		t.Errorf("list = %+v", list)
	}
	if last, err := Last(dir, "/a.yml"); err != nil || last != a1.ID {
		t.Errorf("Last = %q, %v; want %q", last, err, a1.ID)
	}
	if last, _ := Last(dir, "/c.yml"); last != "" {
		t.Errorf("Last of a composition without sessions = %q", last)
	}
}

// BenchmarkSessionResume opens a 200-turn session (a question, a tool
// call, a 2 KB result and an answer per turn); it reports the bytes per
// turn on disk.
func BenchmarkSessionResume(b *testing.B) {
	dir := b.TempDir()
	s, err := New(dir, "/c.yml", "deepseek-chat")
	if err != nil {
		b.Fatal(err)
	}
	result := strings.Repeat("a line of a tool's result\n", 80)
	for i := range 200 {
		if err := s.AppendTurn(context.Background(), nil, "deepseek-chat", usage{Prompt: 1000, Completion: 50}, sessionTurn(i, result)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		ls, err := Open(dir, s.ID)
		if err != nil || len(ls.History) != 800 {
			b.Fatalf("%v, %d messages", err, len(ls.History))
		}
	}
	// After the loop: ResetTimer (which b.Loop calls) drops metrics.
	fi, _ := os.Stat(s.Path)
	b.ReportMetric(float64(fi.Size())/200, "bytes/turn")
	b.ReportMetric(float64(len(marshalAll(b, sessionTurn(0, result)))), "msgbytes/turn")
}

// BenchmarkSessionAppendTurn is the cost a turn pays to be saved (an fsync).
func BenchmarkSessionAppendTurn(b *testing.B) {
	s, err := New(b.TempDir(), "/c.yml", "deepseek-chat")
	if err != nil {
		b.Fatal(err)
	}
	turn := sessionTurn(0, strings.Repeat("a line of a tool's result\n", 80))
	for b.Loop() {
		if err := s.AppendTurn(context.Background(), nil, "deepseek-chat", usage{}, turn); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSessionLargeResultByReference: a tool result over LargeResult is kept
// in the attachments store, not in the session file, and Restore reads it
// back: the history is the same byte for byte.
func TestSessionLargeResultByReference(t *testing.T) {
	store, err := attachments.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := New(dir, "/c.yml", "m")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("a line of a large tool result\n", 2000) // 60 KB
	turn := sessionTurn(0, big)
	if err := s.AppendTurn(context.Background(), store, "m", usage{}, turn); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4096 || !strings.Contains(string(b), `"attachments":[{"message":2,"id":"sha256:`) {
		t.Errorf("the session file (%d bytes) does not name the result by reference:\n%.600s", len(b), b)
	}
	ls, err := Open(dir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ls.Restore(store)
	if err != nil {
		t.Fatal(err)
	}
	if marshalAll(t, got) != marshalAll(t, turn) {
		t.Errorf("the restored history differs from the saved one")
	}
	// Without the store, restoring says where the result is.
	if _, err := ls.Restore(nil); err == nil || !strings.Contains(err.Error(), "attachment sha256:") {
		t.Errorf("Restore without a store: %v", err)
	}
}

// TestSessionHostileLines: a session file is read back, so a line that
// names what is not there (an attachment of no message, a compaction of
// more messages than the history holds, an attachment on a message that
// is no tool result) is an error naming the file and line, or, for the
// attachment on another message, Restore's error naming it: never a panic
// or a history made up.
func TestSessionHostileLines(t *testing.T) {
	start := `{"kind":"start","time":"2026-01-02T03:04:05Z","id":"x","composition":"/c.yml"}` + "\n"
	turn := `{"kind":"turn","time":"2026-01-02T03:04:06Z","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yes"}]}` + "\n"
	for _, c := range []struct {
		name, lines, want string
	}{
		{"attachment of no message", turn + `{"kind":"turn","time":"2026-01-02T03:04:07Z","messages":[{"role":"user","content":"a"}],"attachments":[{"message":5,"id":"sha256:00"}]}` + "\n" + turn, "line 3: attachment sha256:00: no message 5"},
		{"negative attachment", `{"kind":"turn","time":"2026-01-02T03:04:07Z","messages":[{"role":"user","content":"a"}],"attachments":[{"message":-1,"id":"sha256:00"}]}` + "\n" + turn, "line 2: attachment sha256:00: no message -1"},
		{"compaction of too many", turn + `{"kind":"compact","time":"2026-01-02T03:04:07Z","replaces":9,"messages":[{"role":"user","content":"s"}]}` + "\n" + turn, "line 3: the compaction replaces 9 messages of 2"},
		{"compaction of fewer than none", `{"kind":"compact","time":"2026-01-02T03:04:07Z","replaces":-1}` + "\n" + turn, "line 2: the compaction replaces -1 messages of 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "20260102-030405-aaaaaa.jsonl")
			if err := os.WriteFile(path, []byte(start+c.lines), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir, "20260102-030405-aaaaaa")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open = %v, want an error naming %s and %q", err, path, c.want)
			}
		})
	}
	t.Run("attachment on a user message", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "20260102-030405-bbbbbb.jsonl")
		line := `{"kind":"turn","time":"2026-01-02T03:04:07Z","messages":[{"role":"user","content":""}],"attachments":[{"message":0,"id":"sha256:00"}]}` + "\n"
		if err := os.WriteFile(path, []byte(start+line), 0o600); err != nil {
			t.Fatal(err)
		}
		ls, err := Open(dir, "20260102-030405-bbbbbb")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ls.Restore(nil); err == nil || !strings.Contains(err.Error(), "is not a tool result but names attachment sha256:00") {
			t.Errorf("Restore = %v", err)
		}
	})
}
