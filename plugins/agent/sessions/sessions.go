// Package sessions is the store of chat sessions: one conversation saved
// as it goes, a JSON-lines file under $DSH_HOME/sessions. It is no
// plugin: the agent appends to a session as its turns commit, and the
// front ends (cmd's chat, the app API) create, list and open them.
package sessions

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/plugins/agent/chatapi"
	"github.com/dsh-host/dsh-host/services/attachments"
)

// A session is one chat conversation saved as it goes: a JSON-lines file
// under $DSH_HOME/sessions, a "start" line, then one "turn" line per
// committed turn (and a "compact" line where older turns were summarised:
// its messages replace the first "replaces" of the history; an
// "unanswered" line where a turn failed or was cancelled: its opening
// messages, kept for the person, never sent again), appended and
// fsynced when the turn ends, so that a crash
// loses at most the turn in progress. Each turn line holds the messages the
// turn added, as the API receives them, so that a resumed conversation
// sends the model the same history byte for byte. A tool result over
// LargeResult bytes is kept in the attachments store (when the host has
// one) and named in the line by its ref; Loaded.Restore reads it back.
// Images are not kept: the agent saves the text that replaces them once
// the model has answered; the tool result's text still names the
// attachment that holds each one.

// sessionLine is one line of a session file.
type sessionLine struct {
	Kind        string    `json:"kind"` // "start", "turn", "compact" or "unanswered"
	Time        time.Time `json:"time"`
	ID          string    `json:"id,omitempty"`          // start
	Composition string    `json:"composition,omitempty"` // start: the composition file, absolute
	Model       string    `json:"model,omitempty"`
	// Usage is the caller's usage as its JSON: kept raw, so that reading a
	// session back builds no map of it.
	Usage    json.RawMessage   `json:"usage,omitempty"`    // turn, compact
	Messages []json.RawMessage `json:"messages,omitempty"` // turn, compact, unanswered
	// Attachments name the turn's messages whose content is in the
	// attachments store (saved empty in Messages).
	Attachments []savedAttachment `json:"attachments,omitempty"` // turn
	// Replaces is how many messages from the start of the history the
	// Messages of a compaction (its summary) replace.
	Replaces int `json:"replaces,omitempty"` // compact
	// Text is the person's line of an unanswered turn as typed, Error why
	// it got no answer.
	Text  string `json:"text,omitempty"`  // unanswered
	Error string `json:"error,omitempty"` // unanswered
}

// savedAttachment is a tool result kept in the attachments store: the
// index of its message in the turn, and its ref.
type savedAttachment struct {
	Message int    `json:"message"`
	ID      string `json:"id"`
}

// LargeResult is the size from which a tool result is saved by attachment
// reference rather than inline.
const LargeResult = 16 << 10

// Session is a saved conversation's file.
type Session struct {
	ID   string
	Path string
}

// Dir is where sessions are saved: $DSH_HOME/sessions.
func Dir() (string, error) { return dshhome.Path("sessions") }

const sessionExt = ".jsonl"

// New creates the file of a new session of the composition file
// composition in dir (created 0700; the file is 0600: it holds the whole
// conversation).
func New(dir, composition, model string) (*Session, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the sessions directory: %w", err)
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	now := time.Now()
	// The id sorts by time, and says when at a glance.
	id := now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(rnd[:])
	s := &Session{ID: id, Path: filepath.Join(dir, id+sessionExt)}
	line, err := json.Marshal(sessionLine{Kind: "start", Time: now, ID: id, Composition: composition, Model: model})
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create session %s: %w", id, err)
	}
	if err := writeSync(f, append(line, '\n')); err != nil {
		return nil, fmt.Errorf("write session %s: %w", s.Path, err)
	}
	return s, nil
}

func writeSync(f *os.File, b []byte) error {
	_, err := f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// AppendTurn saves one turn's messages, as the model will receive them in
// later requests, with its model and usage (saved as its JSON); tool
// results of LargeResult bytes or more go to store, when not nil.
func (s *Session) AppendTurn(ctx context.Context, store *attachments.Store, model string, usage any, msgs []openai.ChatCompletionMessageParamUnion) error {
	u, err := json.Marshal(usage)
	if err != nil {
		return fmt.Errorf("encode the usage: %w", err)
	}
	tl := sessionLine{Kind: "turn", Time: time.Now(), Model: model, Usage: u}
	for i, m := range msgs {
		if t := m.OfTool; t != nil && store != nil && len(t.Content.OfString.Value) >= LargeResult {
			ref, err := store.SaveBlob(ctx, attachments.Blob{MediaType: "text/plain; charset=utf-8", Data: []byte(t.Content.OfString.Value)})
			if err == nil { // else it is kept inline
				tl.Attachments = append(tl.Attachments, savedAttachment{Message: i, ID: ref.ID})
				m = openai.ToolMessage("", t.ToolCallID)
			}
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode a message: %w", err)
		}
		tl.Messages = append(tl.Messages, raw)
	}
	return s.appendLine(tl)
}

// AppendUnanswered saves the person's line text and the opening messages
// of a turn that failed or was cancelled, and why: the person's message is not lost, and the
// history the next turn builds on stays as it was (Open leaves it out).
func (s *Session) AppendUnanswered(model, text string, msgs []openai.ChatCompletionMessageParamUnion, why string) error {
	ul := sessionLine{Kind: "unanswered", Time: time.Now(), Model: model, Text: text, Error: why}
	for _, m := range msgs {
		raw, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode a message: %w", err)
		}
		ul.Messages = append(ul.Messages, raw)
	}
	return s.appendLine(ul)
}

// AppendCompaction saves a compaction: summary replaces the first
// replaces messages of the history.
func (s *Session) AppendCompaction(model string, usage any, replaces int, summary []openai.ChatCompletionMessageParamUnion) error {
	u, err := json.Marshal(usage)
	if err != nil {
		return fmt.Errorf("encode the usage: %w", err)
	}
	cl := sessionLine{Kind: "compact", Time: time.Now(), Model: model, Usage: u, Replaces: replaces}
	for _, m := range summary {
		raw, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode a message: %w", err)
		}
		cl.Messages = append(cl.Messages, raw)
	}
	return s.appendLine(cl)
}

func (s *Session) appendLine(sl sessionLine) error {
	line, err := json.Marshal(sl)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("session %s: %w", s.ID, err)
	}
	return writeSync(f, append(line, '\n'))
}

// Info is what /sessions lists of a session.
type Info struct {
	ID, Path, Composition string
	Started, Updated      time.Time
	// FirstLine is the first line of the first user message, of a turn
	// or an unanswered one.
	FirstLine string
	Turns     int
	// Unanswered counts the turns that failed or were cancelled.
	Unanswered int
}

// Loaded is a session read back: its history and what was wrong with the
// file but could be skipped.
type Loaded struct {
	*Session
	Info     Info
	History  []openai.ChatCompletionMessageParamUnion
	Warnings []string
	// Transcript is what was said, in the file's order, for a person to
	// read again: every turn's messages (those a compaction replaced too)
	// and the unanswered ones.
	Transcript []Said
	// Pending is the line of the last unanswered turn when no turn came
	// after it: what the person may send again.
	Pending string
	// inStore are the History messages whose content Restore reads from
	// the attachments store.
	inStore []savedAttachment
}

// Open reads the session id in dir. A last line cut short by a
// crash mid-write is skipped with a warning, and cut off the file so that
// later turns append after the last whole one.
func Open(dir, id string) (*Loaded, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return nil, fmt.Errorf("no session %q: not a session id (/sessions lists them)", id)
	}
	path := filepath.Join(dir, id+sessionExt)
	ls, good, err := readSession(path, true)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no session %q in %s (/sessions lists them)", id, dir)
	}
	if err != nil {
		return nil, err
	}
	if len(ls.Warnings) > 0 {
		if err := os.Truncate(path, good); err != nil {
			return nil, fmt.Errorf("session %s: cut the torn last line: %w", path, err)
		}
	}
	return ls, nil
}

// readSession reads path; good is the size of its whole lines. With
// history false, messages are only counted (listing).
func readSession(path string, history bool) (ls *Loaded, good int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	ls = &Loaded{Session: &Session{Path: path, ID: strings.TrimSuffix(filepath.Base(path), sessionExt)}}
	ls.Info.ID, ls.Info.Path = ls.ID, path
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, rerr := r.ReadBytes('\n')
		if len(line) == 0 && rerr == io.EOF {
			break
		}
		if rerr != nil && rerr != io.EOF {
			return nil, 0, fmt.Errorf("read %s: %w", path, rerr)
		}
		var sl sessionLine
		uerr := json.Unmarshal(line, &sl)
		whole := rerr == nil // ends with '\n'
		if uerr == nil && history {
			switch sl.Kind {
			case "turn":
				if uerr = ls.addTurn(sl); uerr == nil {
					uerr = ls.said(sl, false)
				}
			case "compact":
				uerr = ls.compact(sl)
			case "unanswered":
				uerr = ls.said(sl, true)
			}
		}
		if uerr != nil || !whole {
			if _, peek := r.Peek(1); peek == io.EOF {
				// The last line: a crash mid-write. The turns before it stand.
				ls.Warnings = append(ls.Warnings, fmt.Sprintf("session %s: line %d is cut short (a crash while it was written); that turn is skipped", path, n))
				break
			}
			return nil, 0, fmt.Errorf("session %s: line %d: %v", path, n, uerr)
		}
		good += int64(len(line))
		switch sl.Kind {
		case "start":
			ls.Info.Composition, ls.Info.Started, ls.Info.Updated = sl.Composition, sl.Time, sl.Time
		case "turn", "unanswered":
			if sl.Kind == "turn" {
				ls.Info.Turns++
			} else {
				ls.Info.Unanswered++
			}
			ls.Info.Updated = sl.Time
			if ls.Info.FirstLine == "" {
				ls.Info.FirstLine = firstUserLine(sl.Messages)
			}
		}
	}
	return ls, good, nil
}

func (ls *Loaded) addTurn(sl sessionLine) error {
	for _, a := range sl.Attachments {
		if a.Message < 0 || a.Message >= len(sl.Messages) {
			return fmt.Errorf("attachment %s: no message %d in the turn", a.ID, a.Message)
		}
		ls.inStore = append(ls.inStore, savedAttachment{Message: len(ls.History) + a.Message, ID: a.ID})
	}
	for i, raw := range sl.Messages {
		var m openai.ChatCompletionMessageParamUnion
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		chatapi.RestoreReasoning(&m, raw)
		ls.History = append(ls.History, m)
	}
	return nil
}

// compact applies a compaction line: its messages replace the first
// sl.Replaces of the history.
func (ls *Loaded) compact(sl sessionLine) error {
	if sl.Replaces < 0 || sl.Replaces > len(ls.History) {
		return fmt.Errorf("the compaction replaces %d messages of %d", sl.Replaces, len(ls.History))
	}
	summary := make([]openai.ChatCompletionMessageParamUnion, len(sl.Messages))
	for i, raw := range sl.Messages {
		if err := json.Unmarshal(raw, &summary[i]); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		chatapi.RestoreReasoning(&summary[i], raw)
	}
	shift := len(summary) - sl.Replaces
	kept := ls.inStore[:0]
	for _, a := range ls.inStore {
		if a.Message >= sl.Replaces {
			a.Message += shift
			kept = append(kept, a)
		}
	}
	ls.inStore = kept
	ls.History = append(summary, ls.History[sl.Replaces:]...)
	return nil
}

func firstUserLine(msgs []json.RawMessage) string {
	for _, raw := range msgs {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		var s string
		if json.Unmarshal(raw, &m) == nil && m.Role == "user" && json.Unmarshal(m.Content, &s) == nil {
			first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
			return first
		}
	}
	return ""
}

// List returns the sessions in dir, the last updated first; a file
// that cannot be read is left out, and said so in warnings.
func List(dir string) (list []Info, warnings []string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), sessionExt) {
			continue
		}
		ls, _, err := readSession(filepath.Join(dir, e.Name()), false)
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		list = append(list, ls.Info)
	}
	sort.SliceStable(list, func(i, j int) bool {
		if !list[i].Updated.Equal(list[j].Updated) {
			return list[i].Updated.After(list[j].Updated)
		}
		return list[i].ID > list[j].ID
	})
	return list, warnings, nil
}

// Last returns the id of the last updated session of the
// composition file composition that holds a turn, "" when it has none:
// a session whose every turn failed has nothing to go on with.
func Last(dir, composition string) (string, error) {
	list, _, err := List(dir)
	if err != nil {
		return "", err
	}
	for _, s := range list {
		if s.Composition == composition && s.Turns > 0 {
			return s.ID, nil
		}
	}
	return "", nil
}

// Restore returns ls's history with the tool results kept in store read
// back; it fails, naming the attachment, when one cannot be read.
func (ls *Loaded) Restore(store *attachments.Store) ([]openai.ChatCompletionMessageParamUnion, error) {
	h := append([]openai.ChatCompletionMessageParamUnion(nil), ls.History...)
	for _, a := range ls.inStore {
		t := h[a.Message].OfTool
		if t == nil {
			return nil, fmt.Errorf("session %s: message %d is not a tool result but names attachment %s", ls.Path, a.Message, a.ID)
		}
		if store == nil {
			return nil, fmt.Errorf("session %s: a tool result is in attachment %s, and this composition has no attachments service to read it from", ls.Path, a.ID)
		}
		rc, _, err := store.Open(a.ID)
		if err != nil {
			return nil, fmt.Errorf("session %s: read the tool result in attachment %s: %w", ls.Path, a.ID, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("session %s: read the tool result in attachment %s: %w", ls.Path, a.ID, err)
		}
		h[a.Message] = openai.ToolMessage(string(data), t.ToolCallID)
	}
	return h, nil
}
