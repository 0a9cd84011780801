package attachments

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	_ "image/gif"  // image.DecodeConfig must know every admitted format
	_ "image/jpeg" //
	_ "image/png"  //
	"testing"
)

// FuzzValidate feeds arbitrary bytes under each declared type to the
// validator. It must never panic, must refuse with an *Error only, and an
// image it admits must decode with the standard registry (image.DecodeConfig)
// to the format and dimensions it reported.
func FuzzValidate(f *testing.F) {
	seeds := [][]byte{
		makePNG(f, 3, 2), makeJPEG(f, 4, 4), makeGIF(f, 2, 5), tinyWebP,
		makeWebP(2001, 1, color.NRGBA{}), []byte("RIFF\x00\x00\x00\x00WEBPVP8 "),
		[]byte("\x89PNG\r\n\x1a\n"), []byte("GIF89a"), []byte("\xff\xd8\xff"), nil,
	}
	for i, b := range seeds {
		f.Add(b, uint8(i))
	}
	types := []string{PNG, JPEG, GIF, WebP, "image/bmp", "image/png; charset=x", ""}
	limits := Limits{MaxImageBytes: 1 << 20, MaxPixels: 1 << 22, MaxSide: 4096}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte, ti uint8) {
		declared := types[int(ti)%len(types)]
		items, err := validate([]Image{{MediaType: declared, Data: data}}, limits)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("refusal is not an *Error: %v", err)
			}
			return
		}
		ref := items[0].ref
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("admitted as %s %dx%d, but image.DecodeConfig fails: %v", ref.MediaType, ref.Width, ref.Height, err)
		}
		if "image/"+format != ref.MediaType || cfg.Width != ref.Width || cfg.Height != ref.Height {
			t.Fatalf("admitted as %s %dx%d, decodes as %s %dx%d", ref.MediaType, ref.Width, ref.Height, format, cfg.Width, cfg.Height)
		}
		if int64(cfg.Width)*int64(cfg.Height) > limits.MaxPixels || max(cfg.Width, cfg.Height) > limits.MaxSide || int64(len(data)) > limits.MaxImageBytes {
			t.Fatalf("admitted beyond the limits: %dx%d, %d bytes", cfg.Width, cfg.Height, len(data))
		}
	})
}
