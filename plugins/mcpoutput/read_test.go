package mcpoutput

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/attachments"
)

func TestReadOutputRanges(t *testing.T) {
	st, err := attachments.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	save := func(b []byte) string {
		ref, err := st.SaveBlob(context.Background(), attachments.Blob{Data: b})
		if err != nil {
			t.Fatal(err)
		}
		return ref.ID
	}
	text := save([]byte("aé€b")) // a(0) é(1-2) €(3-5) b(6)
	for _, tc := range []struct {
		offset, length int64
		want           OutputSlice
	}{
		{0, 0, OutputSlice{Offset: 0, End: 7, Text: "aé€b"}},
		{2, 3, OutputSlice{Offset: 3, End: 6, Text: "€"}}, // starts inside é, ends inside €: one whole character at least
		{3, 1, OutputSlice{Offset: 3, End: 6, Text: "€"}}, // shorter than the character
		{1, 1, OutputSlice{Offset: 1, End: 3, Text: "é"}},
		{1, 4, OutputSlice{Offset: 1, End: 3, Text: "é"}}, // ends inside €
		{4, 10, OutputSlice{Offset: 6, End: 7, Text: "b"}},
		{7, 1, OutputSlice{Offset: 7, End: 7, Text: ""}},
	} {
		got, err := readOutput(st, text, tc.offset, tc.length)
		if err != nil {
			t.Fatal(err)
		}
		tc.want.ID, tc.want.Total = text, 7
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("read %d+%d (-want +got):\n%s", tc.offset, tc.length, diff)
		}
	}
	// Reading on one byte at a time from where each read ends goes
	// through the whole text, a character a read.
	emoji := save([]byte("a😀é😀"))
	var got string
	for offset, reads := int64(0), 0; offset < 11; reads++ {
		if reads == 11 {
			t.Fatalf("reading on one byte at a time did not reach the end: %q", got)
		}
		s, err := readOutput(st, emoji, offset, 1)
		if err != nil {
			t.Fatal(err)
		}
		got += s.Text
		offset = s.End
	}
	if got != "a😀é😀" {
		t.Errorf("read on one byte at a time: %q", got)
	}
	if s, err := readOutput(st, emoji, 2, 1); err != nil || s.Text != "é" {
		t.Errorf("a one-byte read inside 😀: %+v, %v; want the next whole character", s, err)
	}
	for _, tc := range []struct {
		name, id string
		offset   int64
		want     string
	}{
		{"past the end", text, 8, "past the end"},
		{"negative", text, -1, "must not be negative"},
		{"binary", save(mcptest.WAV(10)), 0, "is not stored text (audio/wave)"},
		{"unknown", "sha256:" + strings.Repeat("0", 64), 0, "not found"},
		{"not an id", "../etc/passwd", 0, "invalid attachment id"},
	} {
		if _, err := readOutput(st, tc.id, tc.offset, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
