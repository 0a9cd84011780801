package attachments

import (
	"bytes"
	"context"
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
			out, rs := s.FitImage(tc.in)
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
			out, rs := s.FitImage(tc.in)
			if rs != nil || !bytes.Equal(out.Data, tc.in.Data) || out.MediaType != tc.in.MediaType {
				t.Errorf("FitImage changed it: %+v", rs)
			}
		})
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
			if _, rs := s.FitImage(Image{MediaType: PNG, Data: shot}); rs == nil {
				b.Fatal("not downscaled")
			}
		}
	})
}
