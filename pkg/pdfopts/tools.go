package pdfopts

// Options of the PDF tools (DESIGN §11: POST /pdf/split, /pdf/pages,
// /pdf/flatten, /pdf/optimize, /pdf/metadata, /pdf/text, /pdf/images).
// What can be judged without the document is judged here, so a mistake is
// a 400 before the upload is queued; what needs the document (a page past
// the last) is judged by the worker, which names the same fields.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

// Tool operations, each a route /pdf/<op> and a job's op (jobspb.ToolJob.Op).
const (
	ToolSplit    = "split"
	ToolPages    = "pages"
	ToolFlatten  = "flatten"
	ToolOptimize = "optimize"
	ToolMetadata = "metadata"
	ToolText     = "text"
	ToolImages   = "images"
)

// ToolMakesPDF says whether tool op's output is a PDF (split: PDFs), the
// tools that take stages.
func ToolMakesPDF(op string) bool {
	return op != ToolText && op != ToolImages
}

// ToolOps are every tool, in DESIGN §11's order.
func ToolOps() []string {
	return []string{ToolSplit, ToolPages, ToolFlatten, ToolOptimize, ToolMetadata, ToolText, ToolImages}
}

const (
	// MaxSplitParts bounds the files one split makes: each is a PDF
	// written and zipped in the worker's memory.
	MaxSplitParts = 1000
	// MaxToolPages bounds the pages /pdf/text and /pdf/images read in one
	// request (the PDFium engine's own bound).
	MaxToolPages = 2000
	// MaxImageDPI bounds /pdf/images' dpi: a Letter page at 600 dpi is
	// 5100 × 6600 pixels, 135 MB as RGBA while it is encoded.
	MaxImageDPI = 600
	// maxOptimizeDPI bounds maxImageDpi: beyond print resolutions it
	// downsamples nothing.
	maxOptimizeDPI = 2400
	// Defaults of /pdf/optimize: JPEG quality 75 and 150 dpi are what
	// Ghostscript's /ebook preset does, smaller files that still print
	// legibly; maxImageDpi 0 keeps every image's size.
	defaultImageQuality = 75
	defaultMaxImageDPI  = 150
	defaultImageDPI     = 72
)

// ToolOptions is a tool's validated options object.
type ToolOptions struct {
	// FileName is the output's name without extension; empty: the
	// uploaded file's name.
	FileName string
	Host     bool
	// UserType decides who may read a hosted result (DESIGN §4.4).
	UserType string
	// Job carries the tool's parameters (its Tool field); the caller fills
	// in the input.
	Job *jobspb.ToolJob
	// Stages are DESIGN §11's steps after the tool, unparsed (the gateway
	// reads them with the request's uploaded parts, as merge's); only the
	// tools whose output is a PDF take them.
	Stages json.RawMessage
}

// toolCommon are the options every tool takes.
type toolCommon struct {
	FileName *string `json:"fileName"`
	Host     *bool   `json:"host"`
	UserType *string `json:"userType"`
}

// pdfOut are the options of a tool whose output is a PDF (split: each part).
type pdfOut struct {
	Stages json.RawMessage `json:"stages"`
}

type splitRaw struct {
	toolCommon
	pdfOut
	Ranges *string `json:"ranges"`
	Every  *int    `json:"every"`
}

type pagesRaw struct {
	toolCommon
	pdfOut
	Select *string        `json:"select"`
	Rotate map[string]int `json:"rotate"`
	Delete *string        `json:"delete"`
}

type flattenRaw struct {
	toolCommon
	pdfOut
}

type optimizeRaw struct {
	toolCommon
	pdfOut
	ImageQuality *int `json:"imageQuality"`
	MaxImageDpi  *int `json:"maxImageDpi"`
}

type metadataRaw struct {
	toolCommon
	pdfOut
	Metadata json.RawMessage `json:"metadata"`
}

type textRaw struct {
	toolCommon
	pdfOut         // refused: stages need a PDF
	Format *string `json:"format"`
	Pages  *string `json:"pages"`
}

type imagesRaw struct {
	toolCommon
	pdfOut         // refused: stages need a PDF
	Format *string `json:"format"`
	DPI    *int    `json:"dpi"`
	Pages  *string `json:"pages"`
}

// ParseToolOptions validates the options field of tool op (one of
// ToolOps); blank means every default. An option the tool does not take
// is a 400 naming it, as a type error is.
func ParseToolOptions(op, s string) (ToolOptions, error) {
	var (
		raw    any
		common *toolCommon
		out    *pdfOut
	)
	switch op {
	case ToolSplit:
		r := &splitRaw{}
		raw, common, out = r, &r.toolCommon, &r.pdfOut
	case ToolPages:
		r := &pagesRaw{}
		raw, common, out = r, &r.toolCommon, &r.pdfOut
	case ToolFlatten:
		r := &flattenRaw{}
		raw, common, out = r, &r.toolCommon, &r.pdfOut
	case ToolOptimize:
		r := &optimizeRaw{}
		raw, common, out = r, &r.toolCommon, &r.pdfOut
	case ToolMetadata:
		r := &metadataRaw{}
		raw, common, out = r, &r.toolCommon, &r.pdfOut
	case ToolText:
		r := &textRaw{}
		raw, common, out = r, &r.toolCommon, &r.pdfOut
	case ToolImages:
		r := &imagesRaw{}
		raw, common, out = r, &r.toolCommon, &r.pdfOut
	default:
		return ToolOptions{}, fmt.Errorf("pdfopts: unknown tool %q", op)
	}
	if strings.TrimSpace(s) != "" {
		if err := DecodeStrict([]byte(s), raw); err != nil {
			return ToolOptions{}, err
		}
	}
	var o ToolOptions
	var err error
	if common.FileName != nil {
		if o.FileName, err = FileName(common.FileName, ""); err != nil {
			return o, err
		}
	}
	o.Host = common.Host != nil && *common.Host
	if o.UserType, err = UserType(common.UserType); err != nil {
		return o, err
	}
	if !isNull(out.Stages) {
		if !ToolMakesPDF(op) {
			return o, invalid.Field("stages", "/pdf/"+op+" makes no PDF to run steps on: stages are for split, pages, flatten, optimize and metadata")
		}
		o.Stages = out.Stages
	}
	o.Job = &jobspb.ToolJob{}
	switch r := raw.(type) {
	case *splitRaw:
		err = r.validate(o.Job)
	case *pagesRaw:
		err = r.validate(o.Job)
	case *flattenRaw:
		o.Job.Tool = &jobspb.ToolJob_Flatten{Flatten: &jobspb.FlattenTool{}}
	case *optimizeRaw:
		err = r.validate(o.Job)
	case *metadataRaw:
		err = r.validate(o.Job)
	case *textRaw:
		err = r.validate(o.Job)
	case *imagesRaw:
		err = r.validate(o.Job)
	}
	return o, err
}

func (r *splitRaw) validate(job *jobspb.ToolJob) error {
	t := &jobspb.SplitTool{}
	job.Tool = &jobspb.ToolJob_Split{Split: t}
	hasRanges := r.Ranges != nil && strings.TrimSpace(*r.Ranges) != ""
	switch {
	case hasRanges && r.Every != nil:
		return invalid.Field("ranges", "give either ranges or every, not both")
	case r.Every != nil:
		if *r.Every < 1 || *r.Every > maxPageNumber {
			return invalid.Field("every", fmt.Sprintf("must be a number of pages from 1 to %d", maxPageNumber))
		}
		t.Every = int32(*r.Every)
		return nil
	case !hasRanges:
		return invalid.Field("ranges", "give ranges (like 1-3,4-9, one file each) or every (pages per file)")
	}
	var err error
	t.Ranges, err = PageRangesOf("ranges", *r.Ranges)
	return err
}

func (r *pagesRaw) validate(job *jobspb.ToolJob) error {
	t := &jobspb.PagesTool{}
	job.Tool = &jobspb.ToolJob_Pages{Pages: t}
	if r.Select == nil && r.Delete == nil && len(r.Rotate) == 0 {
		return invalid.Field("select", "give select (like 3,1-2), rotate (like {\"2-3\": 90}) or delete (like 2,5-6)")
	}
	var err error
	if t.Select, err = pagesOrAll("select", r.Select); err != nil {
		return err
	}
	if t.Delete, err = pagesOrAll("delete", r.Delete); err != nil {
		return err
	}
	if len(r.Rotate) > maxRangeItems {
		return invalid.Field("rotate", fmt.Sprintf("at most %d entries", maxRangeItems))
	}
	for spec, deg := range r.Rotate {
		if deg%90 != 0 {
			return invalid.Field("rotate", fmt.Sprintf("%d degrees for %q is not a multiple of 90", deg, spec))
		}
		key, err := pagesOrAll("rotate", &spec)
		if err != nil {
			return err
		}
		if key == "" {
			return invalid.Field("rotate", "a key must be pages such as 2-3, or all")
		}
		if t.Rotate == nil {
			t.Rotate = map[string]int32{}
		}
		// Two keys naming the same pages ("1-2" and "1 - 2") add up, as
		// overlapping ranges do in the worker.
		t.Rotate[key] += int32(((deg % 360) + 360) % 360)
	}
	return nil
}

// pagesOrAll is PageRangesOf that also takes "all" (every page, in order).
func pagesOrAll(field string, p *string) (string, error) {
	if p == nil {
		return "", nil
	}
	if strings.EqualFold(strings.TrimSpace(*p), "all") {
		return "all", nil
	}
	return PageRangesOf(field, *p)
}

func (r *optimizeRaw) validate(job *jobspb.ToolJob) error {
	t := &jobspb.OptimizeTool{ImageQuality: defaultImageQuality, MaxImageDpi: defaultMaxImageDPI}
	job.Tool = &jobspb.ToolJob_Optimize{Optimize: t}
	if q := r.ImageQuality; q != nil {
		if *q < 1 || *q > 100 {
			return invalid.Field("imageQuality", "must be from 1 to 100")
		}
		t.ImageQuality = int32(*q)
	}
	if d := r.MaxImageDpi; d != nil {
		if *d < 0 || *d > maxOptimizeDPI {
			return invalid.Field("maxImageDpi", fmt.Sprintf("must be from 0 (keep every image's size) to %d", maxOptimizeDPI))
		}
		t.MaxImageDpi = int32(*d)
	}
	return nil
}

func (r *metadataRaw) validate(job *jobspb.ToolJob) error {
	info, err := ParseMetadata(r.Metadata)
	if err != nil {
		return err
	}
	if info == nil {
		return invalid.Field("metadata", "give the metadata to write: {title, author, subject, keywords, creator}")
	}
	job.Tool = &jobspb.ToolJob_Metadata{Metadata: &jobspb.MetadataTool{Info: info}}
	return nil
}

func (r *textRaw) validate(job *jobspb.ToolJob) error {
	t := &jobspb.TextTool{}
	job.Tool = &jobspb.ToolJob_Text{Text: t}
	if r.Format != nil {
		switch strings.ToLower(strings.TrimSpace(*r.Format)) {
		case "text":
		case "markdown":
			t.Markdown = true
		default:
			return invalid.Field("format", "must be text or markdown")
		}
	}
	var err error
	t.Pages, err = pagesOrAll("pages", r.Pages)
	return err
}

func (r *imagesRaw) validate(job *jobspb.ToolJob) error {
	t := &jobspb.ImagesTool{Format: "png", Dpi: defaultImageDPI}
	job.Tool = &jobspb.ToolJob_Images{Images: t}
	if r.Format != nil {
		var err error
		if t.Format, err = ImageFormat("format", *r.Format); err != nil {
			return err
		}
	}
	if r.DPI != nil {
		if *r.DPI < 1 || *r.DPI > MaxImageDPI {
			return invalid.Field("dpi", fmt.Sprintf("must be from 1 to %d", MaxImageDPI))
		}
		t.Dpi = int32(*r.DPI)
	}
	var err error
	t.Pages, err = pagesOrAll("pages", r.Pages)
	return err
}

// ImageFormat is an image format option (/pdf/images, /pdf/screenshot):
// png, jpeg (or jpg) or webp, in any case.
func ImageFormat(field, s string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(s)); f {
	case "png", "jpeg", "webp":
		return f, nil
	case "jpg":
		return "jpeg", nil
	}
	return "", invalid.Field(field, "must be png, jpeg or webp")
}

// ExpandPages lists the pages of a selection checked by PageRangesOf (or
// "all", or blank: nil, every page), in the order given, refusing more
// than max of them before listing any.
func ExpandPages(field, spec string, max int) ([]int, error) {
	spec, err := pagesOrAll(field, &spec)
	if err != nil || spec == "" || spec == "all" {
		return nil, err
	}
	rs, _, err := ParsePageRanges(spec)
	if err != nil {
		return nil, invalid.Field(field, err.Error())
	}
	n := 0
	for _, r := range rs {
		if n += r.Last - r.First + 1; n > max {
			return nil, invalid.Field(field, fmt.Sprintf("at most %d pages at once", max))
		}
	}
	pages := make([]int, 0, n)
	for _, r := range rs {
		for p := r.First; p <= r.Last; p++ {
			pages = append(pages, p)
		}
	}
	return pages, nil
}

// DecodeStrict is Decode that refuses a field v (a pointer to a struct)
// does not have, naming it: a misspelt option ("dpis") would otherwise be
// a silent default.
func DecodeStrict(data []byte, v any) error {
	known := jsonNames(reflect.TypeOf(v).Elem())
	unknown, err := UnknownField(data, known)
	if err != nil {
		return err
	}
	if unknown != "" {
		return invalid.Field(unknown, "unknown option; this route takes "+strings.Join(known, ", "))
	}
	return Decode(data, v)
}

// UnknownField is the first, in sorted order, of the keys of the JSON
// object data that are not in known ("" when there is none); data that is
// not a JSON object is Decode's error.
func UnknownField(data []byte, known []string) (string, error) {
	var fields map[string]json.RawMessage
	if err := Decode(data, &fields); err != nil {
		return "", err
	}
	var unknown []string
	for k := range fields {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return "", nil
	}
	return slices.Min(unknown), nil
}

// jsonNames are the JSON names of struct t's fields, those of embedded
// structs included, sorted.
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			names = append(names, jsonNames(f.Type)...)
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
