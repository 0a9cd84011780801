package attachments

import (
	"context"
	"encoding/binary"
	"testing"
)

func BenchmarkValidate(b *testing.B) {
	for _, tc := range []struct {
		name, mt string
		data     []byte
	}{
		{"png-256", PNG, makePNG(b, 256, 256)},
		{"jpeg-256", JPEG, makeJPEG(b, 256, 256)},
		{"gif-64", GIF, makeGIF(b, 64, 64)},
		{"webp-1", WebP, tinyWebP},
	} {
		b.Run(tc.name, func(b *testing.B) {
			batch := []Image{{MediaType: tc.mt, Data: tc.data}}
			l := DefaultLimits()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := validate(batch, l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSaveImages measures a one-image batch: "new" writes a file each
// time (temp file, two fsyncs, rename), "dedupe" finds it stored already.
func BenchmarkSaveImages(b *testing.B) {
	img := makePNG(b, 256, 256) // ~ 200 KiB
	b.Run("new", func(b *testing.B) {
		s, err := New(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		// Bytes after IEND make every image distinct without changing it.
		data := append(append([]byte(nil), img...), make([]byte, 8)...)
		b.SetBytes(int64(len(data)))
		var n uint64
		for b.Loop() {
			n++
			binary.LittleEndian.PutUint64(data[len(img):], n)
			if _, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: data}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dedupe", func(b *testing.B) {
		s, err := New(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(img)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.SaveImages(context.Background(), []Image{{MediaType: PNG, Data: img}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkStat(b *testing.B) {
	s, err := New(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	refs, err := s.SaveImages(context.Background(), []Image{{MediaType: JPEG, Data: makeJPEG(b, 256, 256)}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Stat(refs[0].ID); err != nil {
			b.Fatal(err)
		}
	}
}
