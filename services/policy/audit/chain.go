package audit

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

// StateFile is the state file's name, in the trail's directory.
const StateFile = "audit.state"

// auditStateVersion is the state file's format.
const auditStateVersion = 1

// auditState is the state file's content, written after every line.
type auditState struct {
	Version int `json:"version"`
	// Seq counts the state's writes: of the file's two slots, the valid
	// one with the higher Seq is the state.
	Seq uint64 `json:"seq"`
	// Hash is the SHA-256 of the trail's latest line, "" before the first.
	Hash string `json:"hash"`
	// Oldest is the trail's oldest file (a rotated file's name, or
	// File): older ones were removed by keep. OldestPrev is the prev
	// its first line carries.
	Oldest     string `json:"oldest"`
	OldestPrev string `json:"oldestPrev"`
}

// The state file is two fixed slots, written in turn in place, each its
// JSON, a checksum of it, padded: a write that a crash cuts spoils only
// the slot it was writing, and the other holds the state before it. In
// place, not a new file renamed over the old: on ext4 the rename makes the
// kernel flush the new file's data, which made every line cost 0.5 ms.
const stateSlot = 512

// encodeSlot is st's slot: `JSON CHECKSUM`, spaces, a newline.
func encodeSlot(st auditState) ([]byte, error) {
	st.Version = auditStateVersion
	data, _ := json.Marshal(st)
	sum := sha256.Sum256(data)
	slot := append(data, ' ')
	slot = hex.AppendEncode(slot, sum[:8])
	if len(slot) >= stateSlot {
		return nil, fmt.Errorf("the audit trail's state does not fit its slot (%d bytes)", len(slot))
	}
	slot = append(slot, bytes.Repeat([]byte{' '}, stateSlot-1-len(slot))...)
	return append(slot, '\n'), nil
}

// decodeSlot reads a slot; ok is false for one that is empty, cut or
// changed.
func decodeSlot(slot []byte) (st auditState, ok bool) {
	slot = bytes.TrimRight(slot, " \n\x00")
	i := bytes.LastIndexByte(slot, ' ')
	if i < 0 {
		return st, false
	}
	sum := sha256.Sum256(slot[:i])
	if string(slot[i+1:]) != hex.EncodeToString(sum[:8]) || json.Unmarshal(slot[:i], &st) != nil || st.Version != auditStateVersion {
		return auditState{}, false
	}
	return st, len(st.Hash) == 0 || len(st.Hash) == 64
}

// readAuditState reads dir's state file: found is false when there is
// none; an error for one that holds no valid slot.
func readAuditState(dir string) (st auditState, found bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read the audit trail's state: %w", err)
	}
	valid := false
	for off := 0; off < len(data); off += stateSlot {
		if s, ok := decodeSlot(data[off:min(off+stateSlot, len(data))]); ok && (!valid || s.Seq > st.Seq) {
			st, valid = s, true
		}
	}
	if !valid {
		return st, true, errors.New("the audit trail's state file holds no valid state")
	}
	return st, true, nil
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
	st, found, err := readAuditState(dir)
	if found && err == nil {
		return st, nil
	}
	if !found && err != nil {
		return st, err
	}
	rebuilt, err := stateFromTrail(dir)
	rebuilt.Seq = st.Seq
	return rebuilt, err
}

// stateFromTrail is the state of the trail in dir as its files are.
func stateFromTrail(dir string) (auditState, error) {
	st := auditState{Version: auditStateVersion, Oldest: File}
	files, err := Files(dir)
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

// saveAuditState writes st, with the next Seq, to dir's state file.
func saveAuditState(dir string, st *auditState) error {
	f, err := os.OpenFile(filepath.Join(dir, StateFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("write the audit trail's state: %w", err)
	}
	err = writeStateSlot(f, st)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write the audit trail's state: %w", cerr)
	}
	return err
}

// writeStateSlot writes st, with the next Seq, into the slot of the
// state file f that does not hold the current state. Not fsynced, as the
// trail's lines are not: a line costs a write, not a disk flush.
func writeStateSlot(f *os.File, st *auditState) error {
	st.Seq++
	slot, err := encodeSlot(*st)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(slot, int64(st.Seq%2)*stateSlot); err != nil {
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
