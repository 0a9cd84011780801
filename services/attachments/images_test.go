package attachments

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// tinyWebP is a 1x1 lossless WebP (one opaque red pixel), built by hand:
// a RIFF/WEBP container around a VP8L stream whose five prefix codes each
// hold a single symbol, so every pixel costs zero bits. TestTinyWebP checks
// it decodes.
var tinyWebP = []byte{
	'R', 'I', 'F', 'F', 0x18, 0x00, 0x00, 0x00, 'W', 'E', 'B', 'P',
	'V', 'P', '8', 'L', 0x0c, 0x00, 0x00, 0x00,
	0x2f, 0x00, 0x00, 0x00, 0x10, 0x28, 0x40, 0xff, 0x0b, 0xd0, 0xff, 0x00,
}

// bitWriter writes VP8L's little-endian bit stream.
type bitWriter struct {
	buf  []byte
	acc  uint64
	nacc uint
}

func (w *bitWriter) put(v uint64, n uint) {
	w.acc |= v << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

func (w *bitWriter) bytes() []byte {
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nacc = 0, 0
	}
	return w.buf
}

// makeWebP returns a lossless w×h WebP of one colour. Its size does not
// depend on w and h, which makes dimension limits cheap to test.
func makeWebP(wd, ht int, c color.NRGBA) []byte {
	var w bitWriter
	w.put(0x2f, 8) // VP8L signature
	w.put(uint64(wd-1), 14)
	w.put(uint64(ht-1), 14)
	w.put(1, 1) // alpha is used
	w.put(0, 3) // version
	w.put(0, 1) // no transform
	w.put(0, 1) // no colour cache
	w.put(0, 1) // no meta prefix codes
	for _, sym := range []uint8{c.G, c.R, c.B, c.A} {
		w.put(1, 1) // simple code
		w.put(0, 1) // one symbol
		w.put(1, 1) // of 8 bits
		w.put(uint64(sym), 8)
	}
	w.put(1, 1) // distance: simple code, one 1-bit symbol 0
	w.put(0, 1)
	w.put(0, 1)
	w.put(0, 1)
	data := w.bytes()
	pad := len(data) & 1
	var out bytes.Buffer
	out.WriteString("RIFF")
	binary.Write(&out, binary.LittleEndian, uint32(4+8+len(data)+pad))
	out.WriteString("WEBPVP8L")
	binary.Write(&out, binary.LittleEndian, uint32(len(data)))
	out.Write(data)
	if pad == 1 {
		out.WriteByte(0)
	}
	return out.Bytes()
}

func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	return img
}

func makePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, gradient(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func makeJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, gradient(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func makeGIF(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, gradient(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
