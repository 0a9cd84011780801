package attachments

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/image/webp"
)

func TestTinyWebP(t *testing.T) {
	if got := makeWebP(1, 1, color.NRGBA{255, 0, 0, 255}); !bytes.Equal(got, tinyWebP) {
		t.Fatalf("makeWebP(1,1) = %#v, want tinyWebP", got)
	}
	for _, size := range []image.Point{{1, 1}, {3, 2}, {2000, 1}} {
		b := makeWebP(size.X, size.Y, color.NRGBA{1, 2, 3, 255})
		img, err := webp.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%v: %v", size, err)
		}
		if got := img.Bounds().Size(); got != size {
			t.Errorf("decoded size %v, want %v", got, size)
		}
		if got := color.NRGBAModel.Convert(img.At(size.X-1, size.Y-1)); got != (color.NRGBA{1, 2, 3, 255}) {
			t.Errorf("%v: pixel %v", size, got)
		}
	}
}

func newStore(t *testing.T, l *Limits) *Store {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "attachments"), l)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func idOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// listing returns every file under dir with its content hash, so that two
// listings compare equal only if no file appeared, vanished or changed. A
// symlink is listed with its target, and not followed.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		case d.IsDir():
			out[rel+"/"] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = idOf(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	for p := range listing(t, dir) {
		if strings.HasPrefix(filepath.Base(p), tempPrefix) {
			t.Errorf("temporary file left behind: %s", p)
		}
	}
}

func TestSaveImagesRoundTrip(t *testing.T) {
	s := newStore(t, nil)
	pngB, jpgB, gifB := makePNG(t, 7, 5), makeJPEG(t, 16, 9), makeGIF(t, 3, 4)
	webpB := makeWebP(640, 480, color.NRGBA{9, 8, 7, 255})
	batch := []Image{
		{MediaType: "image/png", Data: pngB, Name: "a.png"},
		{MediaType: "image/jpeg", Data: jpgB},
		{MediaType: "IMAGE/GIF", Data: gifB, Name: "c.gif"},
		{MediaType: "image/webp; q=1", Data: webpB},
	}
	refs, err := s.SaveImages(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	want := []Ref{
		{ID: idOf(pngB), MediaType: PNG, Bytes: int64(len(pngB)), Width: 7, Height: 5, Name: "a.png"},
		{ID: idOf(jpgB), MediaType: JPEG, Bytes: int64(len(jpgB)), Width: 16, Height: 9},
		{ID: idOf(gifB), MediaType: GIF, Bytes: int64(len(gifB)), Width: 3, Height: 4, Name: "c.gif"},
		{ID: idOf(webpB), MediaType: WebP, Bytes: int64(len(webpB)), Width: 640, Height: 480},
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Fatalf("refs (-want +got):\n%s", diff)
	}
	for i, r := range want {
		r.Name = "" // a name belongs to the save, not to the content
		got, err := s.Stat(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("Stat %d (-want +got):\n%s", i, diff)
		}
		rc, got, err := s.Open(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, batch[i].Data) {
			t.Errorf("Open %d: bytes differ from what was saved", i)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("Open %d ref (-want +got):\n%s", i, diff)
		}
	}
	noTempFiles(t, s.Dir())
}

func TestRefusals(t *testing.T) {
	p := func(w, h int) []byte { return makePNG(t, w, h) }
	small := p(2, 2)
	jpg := makeJPEG(t, 2, 2)
	truncated := append([]byte(nil), small[:20]...)
	lim := &Limits{MaxImageBytes: 4000, MaxImages: 3, MaxBatchBytes: 6000, MaxPixels: 1000, MaxSide: 40}
	big := bytes.Repeat([]byte{1}, 4001)
	copy(big, "\x89PNG\r\n\x1a\n")
	img := func(mt string, b []byte) Image { return Image{MediaType: mt, Data: b} }
	tests := []struct {
		name  string
		batch []Image
		kind  Kind
		index int
	}{
		{"too many images", []Image{img(PNG, small), img(PNG, small), img(PNG, small), img(PNG, small)}, KindTooManyImages, -1},
		{"batch too large", []Image{img(PNG, small), img(PNG, bytes.Repeat([]byte{0}, 3000)), img(PNG, bytes.Repeat([]byte{0}, 3000))}, KindImagesTooLarge, -1},
		{"unsupported type", []Image{img(PNG, small), img("image/bmp", small)}, KindUnsupportedType, 1},
		{"unsupported type svg", []Image{img("image/svg+xml", []byte("<svg/>"))}, KindUnsupportedType, 0},
		{"jpg alias is not a media type", []Image{img("image/jpg", jpg)}, KindUnsupportedType, 0},
		{"no media type", []Image{img("", small)}, KindUnsupportedType, 0},
		// Type checks come before per-image checks, whatever the order.
		{"type checked across the batch first", []Image{img(PNG, nil), img("text/plain", small)}, KindUnsupportedType, 1},
		{"png declared, jpeg bytes", []Image{img(PNG, small), img(PNG, jpg)}, KindTypeMismatch, 1},
		{"webp declared, gif bytes", []Image{img(WebP, makeGIF(t, 1, 1))}, KindTypeMismatch, 0},
		{"gif declared, webp bytes", []Image{img(GIF, tinyWebP)}, KindTypeMismatch, 0},
		{"image too large", []Image{img(PNG, big)}, KindImageTooLarge, 0},
		{"empty", []Image{img(PNG, nil)}, KindInvalidImage, 0},
		{"no signature", []Image{img(JPEG, []byte("hello, world"))}, KindInvalidImage, 0},
		{"truncated header", []Image{img(PNG, small), img(PNG, truncated)}, KindInvalidImage, 1},
		{"bad webp", []Image{img(WebP, []byte("RIFF\x04\x00\x00\x00WEBPVP8X"))}, KindInvalidImage, 0},
		{"too many pixels", []Image{img(PNG, p(35, 35))}, KindTooManyPixels, 0},
		{"width too large", []Image{img(PNG, small), img(WebP, makeWebP(41, 1, color.NRGBA{}))}, KindDimensionTooLarge, 1},
		{"height too large", []Image{img(GIF, makeGIF(t, 1, 41))}, KindDimensionTooLarge, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, lim)
			// A member saved before must survive the refused batch untouched.
			if _, err := s.SaveImages(context.Background(), []Image{img(PNG, small)}); err != nil {
				t.Fatal(err)
			}
			before := listing(t, s.Dir())
			refs, err := s.SaveImages(context.Background(), tt.batch)
			if refs != nil {
				t.Errorf("refs = %v, want none", refs)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if e.Kind != tt.kind || e.Index != tt.index {
				t.Errorf("kind %s index %d, want %s index %d (%v)", e.Kind, e.Index, tt.kind, tt.index, err)
			}
			if !IsAdmissionError(err) || !errors.Is(err, &Error{Kind: tt.kind}) {
				t.Errorf("IsAdmissionError / errors.Is false for %v", err)
			}
			if diff := cmp.Diff(before, listing(t, s.Dir())); diff != "" {
				t.Errorf("a refused batch changed the store (-before +after):\n%s", diff)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	s := newStore(t, &Limits{MaxSide: 10})
	_, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: makePNG(t, 11, 2)}})
	want := "image 0: the image is 11 px on its longest side, more than the limit of 10; downscale it"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	_, err = s.SaveImages(context.Background(), []Image{{MediaType: "image/tiff", Data: []byte("x")}})
	if err == nil || !strings.Contains(err.Error(), `the declared media type "image/tiff" is not PNG, JPEG, WebP, or GIF`) {
		t.Errorf("err = %v", err)
	}
}

func TestCrashBetweenFiles(t *testing.T) {
	type point struct {
		stage string
		n     int
	}
	points := []point{{"commit", 0}}
	for _, stage := range []string{"write", "rename"} {
		for n := 1; n <= 3; n++ {
			points = append(points, point{stage, n})
		}
	}
	for _, p := range points {
		stage, n := p.stage, p.n
		{
			t.Run(fmt.Sprintf("%s#%d", stage, n), func(t *testing.T) {
				s := newStore(t, nil)
				old := makePNG(t, 1, 1)
				if _, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: old}}); err != nil {
					t.Fatal(err)
				}
				before := listing(t, s.Dir())
				boom := errors.New("disk on fire")
				s.hook = func(st string, i int) error {
					if st == stage && i == n {
						return boom
					}
					return nil
				}
				// Three new files, with the old one in the middle: rolling
				// back must not take it away.
				batch := []Image{
					{MediaType: PNG, Data: makePNG(t, 2, 1)},
					{MediaType: PNG, Data: old},
					{MediaType: JPEG, Data: makeJPEG(t, 3, 1)},
					{MediaType: WebP, Data: tinyWebP},
				}
				refs, err := s.SaveImages(context.Background(), batch)
				if !errors.Is(err, boom) || refs != nil {
					t.Fatalf("SaveImages = %v, %v; want the injected failure", refs, err)
				}
				if IsAdmissionError(err) {
					t.Errorf("a storage failure reads as an admission error: %v", err)
				}
				if diff := cmp.Diff(before, listing(t, s.Dir())); diff != "" {
					t.Errorf("the failed batch left the store changed (-before +after):\n%s", diff)
				}
				noTempFiles(t, s.Dir())
				for _, im := range batch[:1] {
					if _, err := s.Stat(idOf(im.Data)); !errors.Is(err, ErrNotFound) {
						t.Errorf("Stat of a rolled-back image: %v, want ErrNotFound", err)
					}
				}
				// The store still works after the failure.
				s.hook = nil
				if _, err := s.SaveImages(context.Background(), batch); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestCancelledBeforePersisting(t *testing.T) {
	s := newStore(t, nil)
	before := listing(t, s.Dir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.SaveImages(ctx, []Image{{MediaType: PNG, Data: makePNG(t, 1, 1)}})
	if !errors.Is(err, context.Canceled) || IsAdmissionError(err) {
		t.Fatalf("err = %v, want context.Canceled, not an admission error", err)
	}
	if diff := cmp.Diff(before, listing(t, s.Dir())); diff != "" {
		t.Errorf("cancelled batch wrote (-before +after):\n%s", diff)
	}
	// An admission refusal wins over cancellation: it says more.
	_, err = s.SaveImages(ctx, []Image{{MediaType: "text/plain"}})
	if !IsAdmissionError(err) {
		t.Errorf("err = %v, want an admission error", err)
	}
}

func TestCancelledMidBatch(t *testing.T) {
	s := newStore(t, nil)
	before := listing(t, s.Dir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.hook = func(stage string, n int) error {
		if stage == "rename" && n == 1 {
			cancel() // the second file then sees the cancellation
		}
		return nil
	}
	_, err := s.SaveImages(ctx, []Image{{MediaType: PNG, Data: makePNG(t, 1, 1)}, {MediaType: PNG, Data: makePNG(t, 2, 2)}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if diff := cmp.Diff(before, listing(t, s.Dir())); diff != "" {
		t.Errorf("cancelled batch left files (-before +after):\n%s", diff)
	}
}

func TestDedupe(t *testing.T) {
	s := newStore(t, nil)
	b := makePNG(t, 4, 4)
	refs, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: b, Name: "x"}, {MediaType: PNG, Data: bytes.Clone(b), Name: "y"}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: b}})
	if err != nil {
		t.Fatal(err)
	}
	if refs[0].ID != refs[1].ID || refs[0].ID != again[0].ID || refs[0].ID != idOf(b) {
		t.Errorf("ids differ for the same bytes: %v %v", refs, again)
	}
	if refs[0].Name != "x" || refs[1].Name != "y" {
		t.Errorf("names not kept per member: %v", refs)
	}
	files := 0
	for p := range listing(t, filepath.Join(s.Dir(), objectsDir)) {
		if !strings.HasSuffix(p, "/") {
			files++
		}
	}
	if files != 1 {
		t.Errorf("%d files stored for one image", files)
	}
}

func TestRestart(t *testing.T) {
	dir := t.TempDir()
	s1, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := makeJPEG(t, 5, 6)
	refs, err := s1.SaveImages(context.Background(), []Image{{MediaType: JPEG, Data: b}})
	if err != nil {
		t.Fatal(err)
	}
	// A crashed writer's temporary file is swept by the next store.
	stale := filepath.Join(dir, objectsDir, refs[0].ID[7:9], tempPrefix+"123")
	if err := os.WriteFile(stale, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.Stat(refs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs[0], got); diff != "" {
		t.Errorf("Stat after restart (-want +got):\n%s", diff)
	}
	rc, _, err := s2.Open(refs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if back, _ := io.ReadAll(rc); !bytes.Equal(back, b) {
		t.Error("bytes differ after restart")
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temporary file survived a restart: %v", err)
	}
}

func TestBadIDs(t *testing.T) {
	s := newStore(t, nil)
	b := makePNG(t, 1, 1)
	refs, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: b}})
	if err != nil {
		t.Fatal(err)
	}
	h := strings.TrimPrefix(refs[0].ID, "sha256:")

	// A symlink planted in the store that points outside it is not followed.
	outside := filepath.Join(t.TempDir(), "secret.png")
	if err := os.WriteFile(outside, b, 0o600); err != nil {
		t.Fatal(err)
	}
	evil := strings.Repeat("e", 64)
	if err := os.MkdirAll(filepath.Join(s.Dir(), objectsDir, "ee"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Dir(), objectsDir, "ee", evil)); err != nil {
		t.Fatal(err)
	}

	// So is a shard directory planted as a symlink to a directory outside
	// the store that holds a valid image under the right name.
	outDir := t.TempDir()
	dirEvil := "dd" + strings.Repeat("d", 62)
	if err := os.WriteFile(filepath.Join(outDir, dirEvil), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outDir, filepath.Join(s.Dir(), objectsDir, "dd")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		id   string
		want error
	}{
		{"", ErrInvalidRef},
		{"sha256:", ErrInvalidRef},
		{h, ErrInvalidRef},
		{"SHA256:" + h, ErrInvalidRef},
		{"sha256:" + strings.ToUpper(h), ErrInvalidRef},
		{"sha256:" + h[:63], ErrInvalidRef},
		{"sha256:" + h + "0", ErrInvalidRef},
		{"sha256:../../../../../../etc/passwd", ErrInvalidRef},
		{"sha256:" + strings.Repeat("../", 21) + "x", ErrInvalidRef},
		{"sha256:/" + h[1:], ErrInvalidRef},
		{"sha256:" + h[:62] + "\x00a", ErrInvalidRef},
		{"md5:" + h, ErrInvalidRef},
		{"/etc/passwd", ErrInvalidRef},
		{"sha256:" + strings.Repeat("0", 64), ErrNotFound},
		{"sha256:" + evil, ErrNotFound},
		{"sha256:" + dirEvil, nil}, // any error: what matters is that nothing outside is read
	}
	refused := func(err, want error) bool {
		if want == nil {
			return err != nil
		}
		return errors.Is(err, want)
	}
	for _, tt := range tests {
		_, err := s.Stat(tt.id)
		if !refused(err, tt.want) {
			t.Errorf("Stat(%q) = %v, want %v", tt.id, err, tt.want)
		}
		rc, _, err := s.Open(tt.id)
		if !refused(err, tt.want) || rc != nil {
			t.Errorf("Open(%q) = %v, want %v", tt.id, err, tt.want)
		}
	}
}

func TestConcurrentSaves(t *testing.T) {
	s := newStore(t, nil)
	imgs := [][]byte{makePNG(t, 1, 1), makePNG(t, 2, 1), makeGIF(t, 2, 2), tinyWebP}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			batch := []Image{{MediaType: PNG, Data: imgs[i%2]}, {MediaType: GIF, Data: imgs[2]}, {MediaType: WebP, Data: imgs[3]}}
			refs, err := s.SaveImages(context.Background(), batch)
			if err == nil {
				for _, r := range refs {
					if _, err = s.Stat(r.ID); err != nil {
						break
					}
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	noTempFiles(t, s.Dir())
}

func TestEmptyBatch(t *testing.T) {
	s := newStore(t, nil)
	refs, err := s.SaveImages(context.Background(), nil)
	if err != nil || len(refs) != 0 {
		t.Errorf("SaveImages(nil) = %v, %v", refs, err)
	}
}

func TestNewRefusesNegativeLimits(t *testing.T) {
	_, err := New(t.TempDir(), &Limits{MaxSide: -1})
	if err == nil || !strings.Contains(err.Error(), "maxSide") {
		t.Errorf("err = %v, want one naming maxSide", err)
	}
	if _, err := New("", nil); err == nil {
		t.Error("New(\"\") succeeded")
	}
}

func TestDecodeBase64Strict(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" with ok false means refused
		ok   bool
	}{
		{"", "", true},
		{"aGk=", "hi", true},
		{"aGkh", "hi!", true},
		{"aA==", "h", true},
		{"aGk", "", false},        // unpadded
		{"aGl=", "", false},       // stray bits in the last quantum
		{"aB==", "", false},       // stray bits
		{"aGk=\n", "", false},     // line break
		{"aG\nk=", "", false},     // line break inside
		{" aGk=", "", false},      // space
		{"aGk-", "", false},       // URL alphabet
		{"a=k=", "", false},       // padding in the middle
		{"====", "", false},       // padding only
		{"aGk=aGk=", "", false},   // padding then data
		{"aGkhaGk===", "", false}, // too much padding
	}
	for _, tt := range tests {
		got, err := DecodeBase64Strict(tt.in)
		if tt.ok {
			if err != nil || string(got) != tt.want {
				t.Errorf("DecodeBase64Strict(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindInvalidBase64 || !IsAdmissionError(err) {
			t.Errorf("DecodeBase64Strict(%q) = %q, %v; want an INVALID_IMAGE_BASE64 refusal", tt.in, got, err)
		}
	}
}

func FuzzDecodeBase64Strict(f *testing.F) {
	for _, s := range []string{"", "aGk=", "aGl=", "aGk=\n", base64.StdEncoding.EncodeToString(tinyWebP)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := DecodeBase64Strict(s)
		if err != nil {
			return
		}
		if back := base64.StdEncoding.EncodeToString(b); back != s {
			t.Fatalf("accepted %q, which re-encodes as %q", s, back)
		}
	})
}

func TestIsAdmissionError(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("disk full"), false},
		{context.Canceled, false},
		{&Error{Kind: KindInvalidImage}, true},
		{errors.Join(errors.New("x"), &Error{Kind: KindTooManyImages}), true},
	}
	for _, tt := range tests {
		if got := IsAdmissionError(tt.err); got != tt.want {
			t.Errorf("IsAdmissionError(%v) = %v", tt.err, got)
		}
	}
}
