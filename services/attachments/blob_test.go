package attachments

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

func TestSaveBlobRoundTrip(t *testing.T) {
	s := newStore(t, nil)
	wav := mcptest.WAV(9000)
	ref, err := s.SaveBlob(context.Background(), Blob{MediaType: "audio/WAV", Data: wav, Name: "beep.wav"})
	if err != nil {
		t.Fatal(err)
	}
	want := Ref{ID: idOf(wav), MediaType: "audio/wav", Bytes: int64(len(wav)), Name: "beep.wav"}
	if diff := cmp.Diff(want, ref); diff != "" {
		t.Fatalf("ref (-want +got):\n%s", diff)
	}
	// Only the bytes are kept: Stat and Open say what they show, in a new
	// store on the same directory too.
	again, err := New(s.Dir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	stat := Ref{ID: ref.ID, MediaType: "audio/wave", Bytes: int64(len(wav))}
	got, err := again.Stat(ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stat, got); diff != "" {
		t.Errorf("Stat (-want +got):\n%s", diff)
	}
	rc, got, err := again.Open(ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(b, wav) {
		t.Errorf("Open read %d bytes (err %v), want the %d saved", len(b), err, len(wav))
	}
	if diff := cmp.Diff(stat, got); diff != "" {
		t.Errorf("Open ref (-want +got):\n%s", diff)
	}
	// The same bytes again are the same ref, and no second file.
	before := listing(t, s.Dir())
	if r2, err := s.SaveBlob(context.Background(), Blob{MediaType: "audio/wav", Data: wav}); err != nil || r2.ID != ref.ID {
		t.Errorf("second save = %v, %v; want the same id", r2, err)
	}
	if diff := cmp.Diff(before, listing(t, s.Dir())); diff != "" {
		t.Errorf("saving the same bytes changed the store:\n%s", diff)
	}
	noTempFiles(t, s.Dir())
}

func TestSaveBlobTypes(t *testing.T) {
	s := newStore(t, &Limits{MaxSide: 10, MaxPixels: 50})
	big := makePNG(t, 40, 30) // over the image limits: a blob still takes it
	for _, tc := range []struct {
		name     string
		blob     Blob
		declared string // in the returned ref
		stat     Ref    // without the id
	}{
		{"pdf sniffed", Blob{Data: []byte("%PDF-1.7\n...")}, "application/pdf", Ref{MediaType: "application/pdf", Bytes: 12}},
		{"unknown bytes", Blob{MediaType: "application/x-thing; v=2", Data: []byte{0, 1, 2, 3}}, "application/x-thing; v=2", Ref{MediaType: "application/octet-stream", Bytes: 4}},
		{"png over the image limits", Blob{MediaType: "image/png", Data: big}, "image/png", Ref{MediaType: PNG, Bytes: int64(len(big)), Width: 40, Height: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := s.SaveBlob(context.Background(), tc.blob)
			if err != nil {
				t.Fatal(err)
			}
			if ref.MediaType != tc.declared {
				t.Errorf("ref media type %q, want %q", ref.MediaType, tc.declared)
			}
			got, err := s.Stat(ref.ID)
			if err != nil {
				t.Fatal(err)
			}
			tc.stat.ID = ref.ID
			if diff := cmp.Diff(tc.stat, got); diff != "" {
				t.Errorf("Stat (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSaveBlobRefusals(t *testing.T) {
	s := newStore(t, &Limits{MaxBatchBytes: 100})
	before := listing(t, s.Dir())
	for _, tc := range []struct {
		name string
		blob Blob
		kind Kind
	}{
		{"too large", Blob{Data: make([]byte, 101)}, KindBlobTooLarge},
		{"bad media type", Blob{MediaType: "audio/", Data: []byte("x")}, KindInvalidMediaType},
		// Stat reads an image's header back, so a broken one is refused.
		{"broken image", Blob{Data: []byte("\x89PNG\r\n\x1a\nnot really")}, KindInvalidImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.SaveBlob(context.Background(), tc.blob)
			if !errors.Is(err, &Error{Kind: tc.kind}) || !IsAdmissionError(err) {
				t.Fatalf("SaveBlob = %v, want a %s refusal", err, tc.kind)
			}
		})
	}
	if diff := cmp.Diff(before, listing(t, s.Dir())); diff != "" {
		t.Errorf("refused blobs changed the store:\n%s", diff)
	}
}

func TestSaveBlobFailureLeavesNothing(t *testing.T) {
	for _, stage := range []string{"write", "rename", "commit"} {
		t.Run(stage, func(t *testing.T) {
			s := newStore(t, nil)
			before := listing(t, s.Dir())
			boom := errors.New("disk on fire")
			s.hook = func(st string, _ int) error {
				if st == stage {
					return boom
				}
				return nil
			}
			wav := mcptest.WAV(10)
			if _, err := s.SaveBlob(context.Background(), Blob{Data: wav}); !errors.Is(err, boom) {
				t.Fatalf("SaveBlob = %v, want the injected failure", err)
			}
			if diff := cmp.Diff(before, listing(t, s.Dir())); diff != "" {
				t.Errorf("the failed save left the store changed:\n%s", diff)
			}
			if _, err := s.Stat(idOf(wav)); !errors.Is(err, ErrNotFound) {
				t.Errorf("Stat after a failed save: %v, want ErrNotFound", err)
			}
		})
	}
}
