package attachments

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// noise is an opaque image that compresses badly, as a photo does.
func noise(w, h int) *image.NRGBA {
	r := rand.New(rand.NewPCG(1, 2))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.Uint32())
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	return img
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFitImage(t *testing.T) {
	s := newStore(t, &Limits{MaxSide: 2000, MaxPixels: 1_000_000, MaxImageBytes: 600_000})
	for _, tc := range []struct {
		name         string
		in           Image
		outType      string
		outW, outH   int
		fromW, fromH int
	}{
		{"screenshot over the side limit", Image{MediaType: PNG, Data: makePNG(t, 2560, 1440)}, PNG, 1333, 750, 2560, 1440},
		{"tall jpeg over the side limit", Image{MediaType: JPEG, Data: makeJPEG(t, 300, 3000)}, JPEG, 200, 2000, 300, 3000},
		{"over the pixel limit only", Image{MediaType: PNG, Data: makePNG(t, 1500, 1500)}, PNG, 1000, 1000, 1500, 1500},
		{"gif becomes png", Image{MediaType: GIF, Data: makeGIF(t, 2100, 10)}, PNG, 2000, 9, 2100, 10},
		{"webp becomes png", Image{MediaType: WebP, Data: makeWebP(2400, 1200, color.NRGBA{1, 2, 3, 255})}, PNG, 1414, 707, 2400, 1200},
		// 800×800 of noise is 2.5 MB as PNG: it shrinks, and as an opaque
		// image becomes JPEG, until under MaxImageBytes.
		{"over the byte limit only", Image{MediaType: PNG, Data: encodePNG(t, noise(800, 800))}, JPEG, 0, 0, 800, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Name = "shot"
			out, rs, err := s.FitImage(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if rs == nil {
				t.Fatal("FitImage left an over-limit image unchanged")
			}
			cfg, err := decodeConfig(out.MediaType, bytes.NewReader(out.Data))
			if err != nil {
				t.Fatal(err)
			}
			if out.MediaType != tc.outType || out.Name != "shot" {
				t.Errorf("out type %q name %q, want %q, shot", out.MediaType, out.Name, tc.outType)
			}
			if tc.outW != 0 && (cfg.Width != tc.outW || cfg.Height != tc.outH) {
				t.Errorf("out %d×%d, want %d×%d", cfg.Width, cfg.Height, tc.outW, tc.outH)
			}
			want := Resized{FromType: canonicalType(tc.in.MediaType), FromWidth: tc.fromW, FromHeight: tc.fromH, Width: cfg.Width, Height: cfg.Height,
				FromBytes: int64(len(tc.in.Data)), Bytes: int64(len(out.Data))}
			if diff := cmp.Diff(want, *rs); diff != "" {
				t.Errorf("Resized (-want +got):\n%s", diff)
			}
			// Aspect kept within a pixel's rounding.
			if d := float64(cfg.Height) - float64(cfg.Width)*float64(tc.fromH)/float64(tc.fromW); d > 1 || d < -1 {
				t.Errorf("aspect changed: %d×%d from %d×%d", cfg.Width, cfg.Height, tc.fromW, tc.fromH)
			}
			if _, err := s.SaveImages(context.Background(), []Image{out}); err != nil {
				t.Errorf("the fitted image is refused: %v", err)
			}
		})
	}
}

func TestFitImageLeavesAlone(t *testing.T) {
	s := newStore(t, &Limits{MaxSide: 100})
	bomb := makePNG(t, 1, 1)
	// A header that claims 10000×10000: more than FitImage decodes.
	copy(bomb[16:24], []byte{0, 0, 0x27, 0x10, 0, 0, 0x27, 0x10})
	for _, tc := range []struct {
		name string
		in   Image
	}{
		{"within the limits", Image{MediaType: PNG, Data: makePNG(t, 100, 50)}},
		{"unsupported type", Image{MediaType: "image/bmp", Data: []byte("BM....")}},
		{"type mismatch", Image{MediaType: JPEG, Data: makePNG(t, 200, 200)}},
		{"undecodable", Image{MediaType: PNG, Data: []byte("\x89PNG\r\n\x1a\ngarbage")}},
		{"over the decode bound", Image{MediaType: PNG, Data: bomb}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rs, err := s.FitImage(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if rs != nil || !bytes.Equal(out.Data, tc.in.Data) || out.MediaType != tc.in.MediaType {
				t.Errorf("FitImage changed it: %+v", rs)
			}
		})
	}
}

// A downscale waits for one of the store's decode slots: with every slot
// taken, a call whose context ends gets that error and decodes nothing,
// an image within the limits needs no slot, and a waiting call goes on
// when a slot frees.
func TestFitImageWaitsForADecodeSlot(t *testing.T) {
	s := newStore(t, &Limits{MaxSide: 100})
	big := Image{MediaType: PNG, Data: makePNG(t, 400, 200)}
	small := Image{MediaType: PNG, Data: makePNG(t, 100, 50)}
	taken := cap(s.decoding)
	if taken != decodeSlots {
		t.Fatalf("the store has %d decode slots, want %d", taken, decodeSlots)
	}
	for range taken {
		s.decoding <- struct{}{}
	}
	defer func() {
		for range taken {
			<-s.decoding
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, rs, err := s.FitImage(ctx, big)
	if !errors.Is(err, context.Canceled) || rs != nil || !bytes.Equal(out.Data, big.Data) {
		t.Fatalf("with every slot taken and ctx done: %+v, %v; want the image as given and ctx's error", rs, err)
	}
	if _, err := s.SaveFitted(ctx, []Image{small, big}); !errors.Is(err, context.Canceled) {
		t.Fatalf("SaveFitted: %v, want ctx's error", err)
	}
	if _, rs, err := s.FitImage(ctx, small); err != nil || rs != nil {
		t.Fatalf("an image within the limits: %+v, %v", rs, err)
	}

	type result struct {
		rs  *Resized
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, rs, err := s.FitImage(context.Background(), big)
		done <- result{rs, err}
	}()
	<-s.decoding // one frees
	taken--
	if r := <-done; r.err != nil || r.rs == nil || r.rs.Width != 100 {
		t.Fatalf("once a slot freed: %+v, %v", r.rs, r.err)
	}
}

// SaveFitted stores each image fitted to the limits and says what it did.
func TestSaveFitted(t *testing.T) {
	s := newStore(t, &Limits{MaxSide: 2000, MaxPixels: 4_000_000})
	got, err := s.SaveFitted(context.Background(), []Image{
		{MediaType: PNG, Data: makePNG(t, 2560, 1440), Name: "shot"},
		{MediaType: PNG, Data: makePNG(t, 10, 10)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := got[0]; r.Resized == nil || r.Ref.Width != 2000 || r.Ref.Height != 1125 || r.Ref.Name != "shot" {
		t.Errorf("the screenshot: %+v %+v", r.Ref, r.Resized)
	}
	if got[0].Resized.Note() != "[image downscaled from 2560×1440 to 2000×1125 to fit the attachment limits (scale 1:1.28)]" {
		t.Errorf("note: %s", got[0].Resized.Note())
	}
	if r := got[1]; r.Resized != nil || r.Ref.Width != 10 {
		t.Errorf("the small image: %+v %+v", r.Ref, r.Resized)
	}
	if _, err := s.Stat(got[0].Ref.ID); err != nil {
		t.Error(err)
	}
}

func TestDownscaleAveragesArea(t *testing.T) {
	// Columns alternate black and white: halved, every pixel is mid-grey.
	src := image.NewRGBA(image.Rect(0, 0, 8, 4))
	for y := range 4 {
		for x := range 8 {
			if x%2 == 0 {
				src.Set(x, y, color.White)
			} else {
				src.Set(x, y, color.Black)
			}
		}
	}
	got := downscale(src, 4, 2)
	for y := range 2 {
		for x := range 4 {
			if c := got.RGBAAt(x, y); c != (color.RGBA{128, 128, 128, 255}) {
				t.Fatalf("pixel %d,%d = %v, want mid-grey", x, y, c)
			}
		}
	}
	// A non-integer factor keeps a flat color flat, edges included.
	flat := image.NewNRGBA(image.Rect(0, 0, 7, 5))
	for i := range flat.Pix {
		flat.Pix[i] = []uint8{10, 200, 30, 255}[i%4]
	}
	got = downscale(flat, 3, 2)
	for y := range 2 {
		for x := range 3 {
			if c := got.RGBAAt(x, y); c != (color.RGBA{10, 200, 30, 255}) {
				t.Fatalf("pixel %d,%d = %v, want the flat color", x, y, c)
			}
		}
	}
}

// BenchmarkFitImage downscales a 2560×1440 screenshot to the default
// limits, next to decoding it only (the least any downscale costs).
func BenchmarkFitImage(b *testing.B) {
	s, err := New(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	shot := makePNG(b, 2560, 1440)
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeImage(PNG, shot); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fit", func(b *testing.B) {
		for b.Loop() {
			if _, rs, _ := s.FitImage(context.Background(), Image{MediaType: PNG, Data: shot}); rs == nil {
				b.Fatal("not downscaled")
			}
		}
	})
}
