package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

const (
	// maxOptimizePixels bounds an image Optimize decodes (width × height):
	// 50 MP is 200 MB as RGBA while it is resampled. Larger images are
	// left as they are, never decoded.
	maxOptimizePixels = 50_000_000
	// minCompressBytes: shorter uncompressed streams are not worth a
	// filter entry.
	minCompressBytes = 64
)

// Optimize writes in to w made smaller and returns the sizes before and
// after: pdfcpu's optimisation (duplicate fonts, images and content
// streams merged, unused resources dropped), uncompressed streams
// deflated (except XMP metadata, which PDF/A wants readable), objects
// packed into compressed object streams, and images recompressed as JPEG
// at imageQuality (1-100) and downsampled to at most maxImageDpi (0: keep
// their size).
//
// An image's dpi is judged against the largest page of the document
// (MediaBox, either side, for any rotation): an image is never drawn
// larger than that, so its longest side needs at most maxImageDpi ×
// that side / 72 pixels. Where it is placed smaller, it keeps more
// pixels than maxImageDpi would need; tracking its placement through the
// content streams is not done. Only images Go can decode and re-encode
// without changing what is seen are touched: 8 bits per component, gray
// or RGB (device or ICC-based), unfiltered, deflated or JPEG, no soft
// mask, mask, decode array or alpha, not themselves a mask, at most 50 MP
// (checked from the dictionary before anything is decoded); an image
// whose JPEG would not be smaller stays as it was.
//
// The result is never larger than in: when it would be, in is written
// unchanged and after equals before. Bad options are an *OptionError
// naming "imageQuality" or "maxImageDpi"; an unusable PDF a
// *BadInputError; cancelling ctx returns ctx's error.
func Optimize(ctx context.Context, in io.ReadSeeker, w io.Writer, imageQuality int, maxImageDpi int) (before, after int64, err error) {
	if w == nil {
		return 0, 0, errors.New("pdfedit: optimize: nil writer")
	}
	if imageQuality < 1 || imageQuality > 100 {
		return 0, 0, &OptionError{Field: "imageQuality", Problem: fmt.Sprintf("%d is not between 1 and 100", imageQuality)}
	}
	if maxImageDpi < 0 {
		return 0, 0, &OptionError{Field: "maxImageDpi", Problem: fmt.Sprintf("%d is not a resolution", maxImageDpi)}
	}
	data, pc, err := readTool(ctx, in, model.OPTIMIZE)
	if err != nil {
		return 0, 0, err
	}
	before = int64(len(data))
	pc.Conf.OptimizeDuplicateContentStreams = true
	pc.Conf.WriteObjectStream = true
	pc.Conf.WriteXRefStream = true
	err = safeEdit(pc, func(pc *model.Context) error {
		if err := pdfcpu.OptimizeXRefTable(pc); err != nil {
			return &BadInputError{Reason: "cannot optimize it: " + truncate(err.Error())}
		}
		if v := pc.XRefTable.Version(); v < model.V15 {
			v = model.V15 // object and cross-reference streams
			pc.RootVersion = &v
		}
		return shrinkStreams(ctx, pc, imageQuality, maxImageDpi)
	})
	if err != nil {
		return 0, 0, err
	}
	var out bytes.Buffer
	out.Grow(len(data))
	if err := save(ctx, pc, &out); err != nil {
		return 0, 0, err
	}
	res := out.Bytes()
	if len(res) >= len(data) {
		res = data
	}
	if _, err := w.Write(res); err != nil {
		return 0, 0, fmt.Errorf("pdfedit: optimize: %w", err)
	}
	return before, int64(len(res)), nil
}

// shrinkStreams recompresses the images and deflates the uncompressed
// streams that the document still uses after pdfcpu's optimisation.
func shrinkStreams(ctx context.Context, pc *model.Context, quality, maxDpi int) error {
	side := 0.0
	if dims, err := pc.PageDims(); err == nil {
		for _, d := range dims {
			side = max(side, d.Width, d.Height)
		}
	}
	maxSide := math.MaxInt
	if maxDpi > 0 && side > 0 {
		maxSide = max(1, int(float64(maxDpi)*side/72))
	}
	masks := maskImages(pc)
	live := reachable(pc)
	for _, nr := range slices.Sorted(maps.Keys(live)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := pc.Table[nr]
		if e == nil || e.Free {
			continue
		}
		sd, ok := e.Object.(types.StreamDict)
		if !ok {
			continue
		}
		if isImage(sd.Dict) {
			if !masks[nr] {
				recompress(pc, &sd, quality, maxSide)
			}
		} else {
			deflate(&sd)
		}
		e.Object = sd
	}
	return nil
}

// isImage reports an image XObject (its /Type is optional).
func isImage(d types.Dict) bool {
	s := d.Subtype()
	return s != nil && *s == "Image"
}

// maskImages is the set of objects some image uses as its /SMask or
// /Mask: recompressing a mask lossily would change what shows through.
func maskImages(pc *model.Context) map[int]bool {
	set := map[int]bool{}
	for _, e := range pc.Table {
		if e == nil || e.Free {
			continue
		}
		sd, ok := e.Object.(types.StreamDict)
		if !ok {
			continue
		}
		for _, k := range []string{"SMask", "Mask"} {
			if ref, ok := sd.Dict[k].(types.IndirectRef); ok {
				set[ref.ObjectNumber.Value()] = true
			}
		}
	}
	return set
}

// deflate compresses an unfiltered stream, unless it is XMP metadata or
// would not get smaller.
func deflate(sd *types.StreamDict) {
	if len(sd.FilterPipeline) > 0 || sd.Dict["Filter"] != nil || len(sd.Raw) < minCompressBytes {
		return
	}
	if t := sd.Type(); t != nil && *t == "Metadata" {
		return
	}
	c := *sd
	c.Dict = sd.Dict.Clone().(types.Dict)
	c.Content = sd.Raw
	c.FilterPipeline = []types.PDFFilter{{Name: filter.Flate}}
	c.InsertName("Filter", filter.Flate)
	if c.Encode() != nil || len(c.Raw) >= len(sd.Raw) {
		return
	}
	c.Content = nil
	*sd = c
}

// imageComponents is the number of color components of an image color
// space Optimize recompresses (gray or RGB, device or ICC-based); 0 for
// any other.
func imageComponents(pc *model.Context, cs types.Object) int {
	o, err := pc.Dereference(cs)
	if err != nil {
		return 0
	}
	switch v := o.(type) {
	case types.Name:
		switch v {
		case "DeviceGray":
			return 1
		case "DeviceRGB":
			return 3
		}
	case types.Array:
		if len(v) != 2 {
			return 0
		}
		if n, ok := v[0].(types.Name); !ok || n != "ICCBased" {
			return 0
		}
		icc, _, err := pc.DereferenceStreamDict(v[1])
		if err != nil || icc == nil {
			return 0
		}
		if n := icc.IntEntry("N"); n != nil && (*n == 1 || *n == 3) {
			return *n
		}
	}
	return 0
}
