package attachments

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"

	"golang.org/x/image/webp"
)

// MaxDecodePixels bounds the images FitImage decodes to downscale: a
// decoded image takes up to 4 bytes a pixel, so a larger one (a
// decompression bomb, or a 10000×10000 scan) is left for SaveImages to
// refuse rather than decoded.
const MaxDecodePixels = 64_000_000

// decodeSlots is how many downscales of a store run at once (a host has
// one store). Each holds a decoded image of up to 4×MaxDecodePixels bytes
// (256 MB) while it works, and calls come in parallel (an agent runs a
// turn's tool calls at once, a gateway serves many clients): without a
// bound, memory would grow with the number of calls.
const decodeSlots = 2

// Resized says what FitImage did to an image.
type Resized struct {
	FromType              string // the original's media type
	FromWidth, FromHeight int
	Width, Height         int
	FromBytes, Bytes      int64
}

// FitImage returns im unchanged when its size, dimensions and pixel count
// are within the store's limits, or else a downscaled re-encoding that
// fits them, aspect kept, and what was done. Downscaling averages the area
// each new pixel covers. It holds the decoded source (up to 4 bytes a
// pixel of at most MaxDecodePixels), the smaller result and a few rows;
// at most two downscales of the store run at once, and a call waits for
// its turn until ctx is done, which is the only error.
//
// PNG stays PNG and JPEG stays JPEG; GIF (its first frame) and WebP (no
// encoder) become PNG, and an opaque image whose PNG is still over
// MaxImageBytes becomes JPEG. Anything FitImage cannot decode, it returns
// unchanged, for SaveImages to refuse with the reason: downscaling is the
// caller's choice, kept out of SaveImages so that the store still admits
// exactly the bytes it is given, validated, all or none.
func (s *Store) FitImage(ctx context.Context, im Image) (Image, *Resized, error) {
	l := s.limits
	t := canonicalType(im.MediaType)
	if t == "" || sniff(im.Data) != t {
		return im, nil, nil
	}
	cfg, err := decodeConfig(t, bytes.NewReader(im.Data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return im, nil, nil
	}
	w, h := cfg.Width, cfg.Height
	px := int64(w) * int64(h)
	if w <= l.MaxSide && h <= l.MaxSide && px <= l.MaxPixels && int64(len(im.Data)) <= l.MaxImageBytes {
		return im, nil, nil
	}
	if px > MaxDecodePixels {
		return im, nil, nil
	}
	select {
	case s.decoding <- struct{}{}:
		defer func() { <-s.decoding }()
	case <-ctx.Done():
		return im, nil, fmt.Errorf("attachments: waiting to downscale an image: %w", ctx.Err())
	}
	fitted, rs := fit(l, t, w, h, im)
	return fitted, rs, nil
}

// fit downscales im (of type t, w×h) to fit l.
func fit(l Limits, t string, w, h int, im Image) (Image, *Resized) {
	px := int64(w) * int64(h)
	src, err := decodeImage(t, im.Data)
	if err != nil {
		return im, nil
	}
	f := min(1, float64(l.MaxSide)/float64(w), float64(l.MaxSide)/float64(h), math.Sqrt(float64(l.MaxPixels)/float64(px)))
	outType := t
	if t == GIF || t == WebP {
		outType = PNG
	}
	var data []byte
	var dw, dh int
	// Each try that comes out over MaxImageBytes shrinks the next one by
	// what the bytes say, and a little more; a few tries are enough.
	for try := 0; try < 6; try++ {
		dw, dh = max(1, int(float64(w)*f)), max(1, int(float64(h)*f))
		for int64(dw)*int64(dh) > l.MaxPixels && (dw > 1 || dh > 1) {
			dw, dh = max(1, dw-1), max(1, dh*(dw-1)/max(1, dw))
		}
		img := src
		if dw != w || dh != h {
			img = downscale(src, dw, dh)
		}
		data, err = encode(outType, img)
		if err != nil {
			return im, nil
		}
		if int64(len(data)) > l.MaxImageBytes && outType == PNG && opaque(img) {
			outType = JPEG
			if data, err = encode(JPEG, img); err != nil {
				return im, nil
			}
		}
		if int64(len(data)) <= l.MaxImageBytes {
			break
		}
		f *= 0.9 * math.Sqrt(float64(l.MaxImageBytes)/float64(len(data)))
	}
	return Image{MediaType: outType, Data: data, Name: im.Name}, &Resized{
		FromType: t, FromWidth: w, FromHeight: h, Width: dw, Height: dh,
		FromBytes: int64(len(im.Data)), Bytes: int64(len(data)),
	}
}

// Note says in one line, for the model, what FitImage did.
func (r *Resized) Note() string {
	return fmt.Sprintf("[image downscaled from %d×%d to %d×%d to fit the attachment limits (scale 1:%.4g)]",
		r.FromWidth, r.FromHeight, r.Width, r.Height, float64(r.FromWidth)/float64(r.Width))
}

// Fitted is one image SaveFitted stored: its reference, and what FitImage
// did to it first (nil when it was stored as given).
type Fitted struct {
	Ref     Ref
	Resized *Resized
}

// SaveFitted is the admit path for images from outside (tool results,
// resources, prompts): each image of batch is fitted to the limits
// (FitImage), then the batch is saved all or none (SaveImages). An error
// is SaveImages' (an admission error the caller may answer by keeping the
// bytes as a blob) or ctx's.
func (s *Store) SaveFitted(ctx context.Context, batch []Image) ([]Fitted, error) {
	fitted := make([]Image, len(batch))
	out := make([]Fitted, len(batch))
	for i, im := range batch {
		f, rs, err := s.FitImage(ctx, im)
		if err != nil {
			return nil, err
		}
		fitted[i], out[i].Resized = f, rs
	}
	refs, err := s.SaveImages(ctx, fitted)
	if err != nil {
		return nil, err
	}
	for i := range refs {
		out[i].Ref = refs[i]
	}
	return out, nil
}

// decodeImage decodes data with the decoder of mediaType only.
func decodeImage(mediaType string, data []byte) (image.Image, error) {
	r := bytes.NewReader(data)
	switch mediaType {
	case PNG:
		return png.Decode(r)
	case JPEG:
		return jpeg.Decode(r)
	case GIF:
		return gif.Decode(r)
	case WebP:
		return webp.Decode(r)
	}
	return nil, image.ErrFormat
}

func encode(mediaType string, img image.Image) ([]byte, error) {
	var b bytes.Buffer
	var err error
	if mediaType == JPEG {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 90})
	} else {
		err = png.Encode(&b, img)
	}
	return b.Bytes(), err
}

// opaque reports whether every pixel of img is fully opaque.
func opaque(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return o.Opaque()
	}
	return false
}

// downscale returns src shrunk to dw×dh (each no larger than src's side)
// by area averaging: each new pixel is the mean of the source area it
// covers, partly covered source pixels weighted by their share, in
// premultiplied color. It holds one source row and two accumulator rows
// at a time.
func downscale(src image.Image, dw, dh int) *image.RGBA {
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	fx, fy := float64(sw)/float64(dw), float64(sh)/float64(dh)

	// The horizontal weights, once: dst column x covers source columns
	// [x*fx, (x+1)*fx).
	type tap struct {
		x int
		w float64
	}
	cols := make([][]tap, dw)
	for x := range dw {
		x0, x1 := float64(x)*fx, min(float64(x+1)*fx, float64(sw))
		for sx := int(x0); float64(sx) < x1 && sx < sw; sx++ {
			if w := min(x1, float64(sx+1)) - max(x0, float64(sx)); w > 0 {
				cols[x] = append(cols[x], tap{sx, w})
			}
		}
	}

	row := image.NewRGBA(image.Rect(0, 0, sw, 1))
	hrow := make([]float64, 4*dw) // the current source row, resampled to dw
	acc := make([]float64, 4*dw)
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	loaded := -1
	load := func(sy int) {
		if sy == loaded {
			return
		}
		loaded = sy
		draw.Draw(row, row.Rect, src, image.Pt(b.Min.X, b.Min.Y+sy), draw.Src)
		for x, taps := range cols {
			var r, g, bl, a float64
			for _, t := range taps {
				p := row.Pix[4*t.x : 4*t.x+4 : 4*t.x+4]
				r += t.w * float64(p[0])
				g += t.w * float64(p[1])
				bl += t.w * float64(p[2])
				a += t.w * float64(p[3])
			}
			hrow[4*x], hrow[4*x+1], hrow[4*x+2], hrow[4*x+3] = r, g, bl, a
		}
	}
	for y := range dh {
		clear(acc)
		y0, y1 := float64(y)*fy, min(float64(y+1)*fy, float64(sh))
		area := 0.0
		for sy := int(y0); float64(sy) < y1 && sy < sh; sy++ {
			w := min(y1, float64(sy+1)) - max(y0, float64(sy))
			if w <= 0 {
				continue
			}
			load(sy)
			for i, v := range hrow {
				acc[i] += w * v
			}
			area += w
		}
		out := dst.Pix[y*dst.Stride : y*dst.Stride+4*dw]
		for x := range dw {
			norm := area * (min(float64(x+1)*fx, float64(sw)) - float64(x)*fx)
			for c := range 4 {
				out[4*x+c] = uint8(min(255, math.Round(acc[4*x+c]/norm)))
			}
		}
	}
	return dst
}
