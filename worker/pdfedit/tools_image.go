package pdfedit

import (
	"bytes"
	"image"
	"image/jpeg"

	"golang.org/x/image/draw"

	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/pkg/limits"
)

// recompress replaces the image sd with a JPEG at quality, no side longer
// than maxSide, when Optimize may touch it (see there) and the JPEG is
// smaller. Anything unexpected leaves the image as it was: a tool that
// shrinks files must not fail a document over one picture.
func recompress(pc *model.Context, sd *types.StreamDict, quality, maxSide int) {
	d := sd.Dict
	for _, k := range []string{"SMask", "Mask", "Decode", "ImageMask", "Alternates"} {
		if d[k] != nil {
			return
		}
	}
	if v := d.IntEntry("SMaskInData"); v != nil && *v != 0 {
		return
	}
	if bpc := d.IntEntry("BitsPerComponent"); bpc == nil || *bpc != 8 {
		return
	}
	comps := imageComponents(pc, d["ColorSpace"])
	w, h := d.IntEntry("Width"), d.IntEntry("Height")
	if comps == 0 || w == nil || h == nil || limits.Dimensions(*w, *h, maxOptimizePixels) != nil {
		return
	}
	img := decodeImage(sd, *w, *h, comps)
	if img == nil {
		return
	}
	sd.Content = nil // the decoded samples, kept by pdfcpu's decode
	if long := max(*w, *h); long > maxSide {
		nw, nh := max(1, *w*maxSide/long), max(1, *h*maxSide/long)
		var dst draw.Image
		if comps == 1 {
			dst = image.NewGray(image.Rect(0, 0, nw, nh))
		} else {
			dst = image.NewRGBA(image.Rect(0, 0, nw, nh))
		}
		draw.BiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
		img = dst
	}
	var buf bytes.Buffer
	if jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}) != nil || buf.Len() >= len(sd.Raw) {
		return
	}
	b := img.Bounds()
	sd.Raw = buf.Bytes()
	n := int64(len(sd.Raw))
	sd.StreamLength = &n
	sd.FilterPipeline = []types.PDFFilter{{Name: filter.DCT}}
	d["Filter"] = types.Name(filter.DCT)
	delete(d, "DecodeParms")
	d["Width"] = types.Integer(b.Dx())
	d["Height"] = types.Integer(b.Dy())
	d["Length"] = types.Integer(n)
}

// decodeImage decodes the samples of a w×h image of comps components
// (dimensions already bounded): unfiltered, deflated (pdfcpu undoes any
// predictor, bounded to the samples' size) or a baseline JPEG whose
// header agrees with the dictionary. nil for anything else.
func decodeImage(sd *types.StreamDict, w, h, comps int) image.Image {
	want := w * h * comps
	var samples []byte
	switch {
	case len(sd.FilterPipeline) == 0:
		samples = sd.Raw
	case sd.HasSoleFilterNamed(filter.Flate):
		if sd.DecodeWithLimit(int64(want)) != nil {
			return nil
		}
		samples = sd.Content
	case sd.HasSoleFilterNamed(filter.DCT) && sd.FilterPipeline[0].DecodeParms == nil:
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(sd.Raw))
		if err != nil || cfg.Width != w || cfg.Height != h {
			return nil
		}
		img, err := jpeg.Decode(bytes.NewReader(sd.Raw))
		if err != nil {
			return nil
		}
		switch img.(type) {
		case *image.Gray:
			if comps == 1 {
				return img
			}
		case *image.YCbCr:
			if comps == 3 {
				return img
			}
		}
		return nil // CMYK, or not what the color space says
	default:
		return nil
	}
	if len(samples) < want {
		return nil
	}
	r := image.Rect(0, 0, w, h)
	if comps == 1 {
		return &image.Gray{Pix: samples[:want], Stride: w, Rect: r}
	}
	rgba := image.NewRGBA(r)
	for i, j := 0, 0; i < want; i, j = i+3, j+4 {
		rgba.Pix[j], rgba.Pix[j+1], rgba.Pix[j+2], rgba.Pix[j+3] = samples[i], samples[i+1], samples[i+2], 0xff
	}
	return rgba
}
