package policy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The trail's chain: every line ends with `"prev":"<hex>"`, the SHA-256
// of the whole line before it (its bytes without the newline), and the
// state file beside the trail holds the latest line's hash and where the
// chain starts. A line says what came before it; the state says what
// came last, which no line can.

// AuditState is the state file's name, in the trail's directory.
const AuditState = "audit.state"

// auditStateVersion is the state file's format.
const auditStateVersion = 1

// auditState is the state file: written, atomically, after every line.
type auditState struct {
	Version int `json:"version"`
	// Hash is the SHA-256 of the trail's latest line, "" before the first.
	Hash string `json:"hash"`
	// Oldest is the trail's oldest file (a rotated file's name, or
	// AuditFile): older ones were removed by keep. OldestPrev is the prev
	// its first line carries.
	Oldest     string `json:"oldest"`
	OldestPrev string `json:"oldestPrev"`
}

// lineHash is the hash a line's successor carries: of line without its
// newline.
func lineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// chainLine returns the JSON object body with `"prev":prev` added as its
// last member, and a newline.
func chainLine(body []byte, prev string) []byte {
	body = bytes.TrimRight(body, "\n")
	line := make([]byte, 0, len(body)+len(`,"prev":""}`)+len(prev)+1)
	line = append(line, body[:len(body)-1]...) // without the closing brace
	if len(bytes.TrimSpace(body[1:len(body)-1])) > 0 {
		line = append(line, ',')
	}
	line = append(line, `"prev":"`...)
	line = append(line, prev...)
	return append(line, '"', '}', '\n')
}

// loadAuditState reads dir's state file. Without one (a new trail, or one
// written before the chain), or with one that does not read, the state
// is rebuilt from the trail itself: its last line and its oldest file.
func loadAuditState(dir string) (auditState, error) {
	data, err := os.ReadFile(filepath.Join(dir, AuditState))
	if err == nil {
		var st auditState
		if json.Unmarshal(data, &st) == nil && st.Version == auditStateVersion && (st.Hash == "" || len(st.Hash) == 64) {
			return st, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return auditState{}, fmt.Errorf("read the audit trail's state: %w", err)
	}
	return stateFromTrail(dir)
}

// stateFromTrail is the state of the trail in dir as its files are.
func stateFromTrail(dir string) (auditState, error) {
	st := auditState{Version: auditStateVersion, Oldest: AuditFile}
	files, err := AuditFiles(dir)
	if err != nil {
		return st, fmt.Errorf("read the audit trail: %w", err)
	}
	if len(files) == 0 {
		return st, nil
	}
	st.Oldest = filepath.Base(files[0])
	st.OldestPrev = firstPrev(files[0])
	for i := len(files) - 1; i >= 0; i-- {
		last, err := lastLine(files[i])
		if err != nil {
			return st, fmt.Errorf("read the audit trail: %w", err)
		}
		if last != nil {
			st.Hash = lineHash(last)
			break
		}
	}
	return st, nil
}

// saveAuditState replaces dir's state file with st in one rename. Not
// fsynced, as the trail's lines are not: a line costs a write, not a
// disk flush.
func saveAuditState(dir string, st auditState) error {
	st.Version = auditStateVersion
	data, _ := json.Marshal(st)
	tmp := filepath.Join(dir, "."+AuditState+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write the audit trail's state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, AuditState)); err != nil {
		return fmt.Errorf("write the audit trail's state: %w", err)
	}
	return nil
}

// firstPrev is the prev of the first line of the file at path, "" when it
// has none (empty, or a line from before the chain).
func firstPrev(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return ""
	}
	prev, _ := linePrev(bytes.TrimRight(line, "\n"))
	if prev == nil {
		return ""
	}
	return *prev
}

// linePrev decodes a line's prev: nil for a line without one (written
// before the chain); an error for a line that is not a JSON object.
func linePrev(line []byte) (*string, error) {
	var v struct {
		Prev *string `json:"prev"`
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return nil, err
	}
	return v.Prev, nil
}

// lastLine returns the last whole line of the file at path, without its
// newline; nil for an empty file. It reads backwards from the end.
func lastLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	end := st.Size()
	var tail []byte
	const chunk = 64 << 10
	for off := end; off > 0; {
		n := min(int64(chunk), off)
		off -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return nil, err
		}
		tail = append(buf, tail...)
		body := bytes.TrimRight(tail, "\n")
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
			return body[i+1:], nil
		}
		if off == 0 && len(body) > 0 {
			return body, nil
		}
	}
	return nil, nil
}
