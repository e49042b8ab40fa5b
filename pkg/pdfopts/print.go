package pdfopts

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

// Bounds of DESIGN §6's options. Templates and scripts travel inside the
// job message, so each is small next to NATS's 1 MiB payload.
const (
	MaxTemplateBytes = 64 << 10
	// MaxOptionsBytes bounds all of them together, as they travel.
	MaxOptionsBytes    = 256 << 10
	maxSelectorBytes   = 1 << 10
	maxExpressionBytes = 4 << 10
	maxInfoChars       = 1000
	maxKeywords        = 100
	maxPasswordBytes   = 127 // AES-256 (PDF 2.0) passwords: at most 127 bytes of UTF-8
	maxHeaders         = 50
	maxHeaderBytes     = 8 << 10
	maxCookies         = 50
	maxCookieBytes     = 4 << 10
	maxUserAgent       = 512
	maxPageNumber      = 100000
	// maxRangeItems bounds the comma-separated items of a page selection.
	maxRangeItems = 100
)

// The uploaded files of a generate that serve as headerTemplate and
// footerTemplate when those are not given (DESIGN §6).
const (
	HeaderFile = "header.html"
	FooterFile = "footer.html"
)

// IsMarginFile reports whether an uploaded file is the header or footer
// template, never the page itself.
func IsMarginFile(name string) bool { return name == HeaderFile || name == FooterFile }

// PrintRaw are DESIGN §6's fields as the client sends them: part of Raw,
// of a batch's options and of each batch document.
type PrintRaw struct {
	HeaderTemplate    *string  `json:"headerTemplate"`
	FooterTemplate    *string  `json:"footerTemplate"`
	WaitForSelector   *string  `json:"waitForSelector"`
	WaitForExpression *string  `json:"waitForExpression"`
	WaitDelay         *string  `json:"waitDelay"`
	EmulatedMediaType *string  `json:"emulatedMediaType"`
	Scale             *float64 `json:"scale"`
	PageRanges        *string  `json:"pageRanges"`
	PrintBackground   *bool    `json:"printBackground"`
	Tagged            *bool    `json:"tagged"`
	Outline           *bool    `json:"outline"`
	// Toc: a table of contents at <nav data-toc> (DESIGN §10).
	Toc *bool `json:"toc"`
	// Split: print a long document in slices (DESIGN §10); absent: past
	// DOCRENDER_SPLIT_PAGES pages.
	Split                *bool           `json:"split"`
	Metadata             json.RawMessage `json:"metadata"`
	Encryption           json.RawMessage `json:"encryption"`
	FailOnConsoleErrors  *bool           `json:"failOnConsoleErrors"`
	FailOnResourceErrors *bool           `json:"failOnResourceErrors"`
	// FailOnAccessibilityErrors: images without alternative text fail the
	// render (DESIGN §8, PDF/UA).
	FailOnAccessibilityErrors *bool           `json:"failOnAccessibilityErrors"`
	ExtraHTTPHeaders          json.RawMessage `json:"extraHttpHeaders"`
	Cookies                   json.RawMessage `json:"cookies"`
	UserAgent                 *string         `json:"userAgent"`
	// Report puts report.json into a batch's ZIP.
	Report *bool `json:"report"`
	// DESIGN §8's documents-of-record options.
	RecordRaw
	// Stages orders the post-processing steps (DESIGN §11, ApplyStages).
	Stages json.RawMessage `json:"stages"`
}

// PrintOptions are the validated §6 fields.
type PrintOptions struct {
	Print      *jobspb.Print
	Info       *jobspb.DocInfo    // nil: the title from <title>
	Encryption *jobspb.Encryption // nil: not encrypted
	Fetch      *jobspb.PageURL    // headers, cookies, user agent of a URL render (URL empty)
	Report     bool
	Record     *jobspb.Record // nil: none of §8
	// Stages are the steps' order when the client gave stages
	// (StepsOrdered), with the steps only stages carry: the watermark
	// (Raw.Validate moves it to Options.Watermark) and pages.
	Stages         []string
	StepsOrdered   bool
	StageWatermark *jobspb.Watermark
	Pages          *jobspb.PagesTool
}

// Steps are o's post-processing steps, for CheckStages once the
// request's uploaded parts are in.
func (o PrintOptions) Steps() Steps {
	return Steps{Info: o.Info, Encryption: o.Encryption, Record: o.Record, Pages: o.Pages, Order: o.Stages, Ordered: o.StepsOrdered}
}

// IsZero reports whether no field was sent.
func (p PrintRaw) IsZero() bool { return reflect.ValueOf(p).IsZero() }

// Over returns base with every field p sets replacing base's: a batch
// document's own fields over the batch's options.
func (p PrintRaw) Over(base PrintRaw) PrintRaw {
	out := base
	over(reflect.ValueOf(&out).Elem(), reflect.ValueOf(p))
	return out
}

// over sets each field src sets on dst, field by field also inside
// embedded structs (RecordRaw), so a document's own pdfua keeps the
// batch's pdfa.
func over(dst, src reflect.Value) {
	for i := range src.NumField() {
		f := src.Field(i)
		switch {
		case src.Type().Field(i).Anonymous && f.Kind() == reflect.Struct:
			over(dst.Field(i), f)
		case !f.IsZero():
			dst.Field(i).Set(f)
		}
	}
}

// Validate checks every §6 field. renderTimeout bounds waitDelay (a wait
// as long as the render can never print).
func (p PrintRaw) Validate(renderTimeout time.Duration) (PrintOptions, error) {
	pr := &jobspb.Print{}
	var err error
	if pr.HeaderTemplate, err = template("headerTemplate", p.HeaderTemplate); err != nil {
		return PrintOptions{}, err
	}
	if pr.FooterTemplate, err = template("footerTemplate", p.FooterTemplate); err != nil {
		return PrintOptions{}, err
	}
	if pr.WaitForSelector, err = text("waitForSelector", p.WaitForSelector, maxSelectorBytes); err != nil {
		return PrintOptions{}, err
	}
	if pr.WaitForExpression, err = text("waitForExpression", p.WaitForExpression, maxExpressionBytes); err != nil {
		return PrintOptions{}, err
	}
	if p.WaitDelay != nil {
		d, err := time.ParseDuration(strings.TrimSpace(*p.WaitDelay))
		if err != nil || d < 0 {
			return PrintOptions{}, invalid.Field("waitDelay", "must be a duration such as 500ms or 2s")
		}
		if renderTimeout > 0 && d >= renderTimeout {
			return PrintOptions{}, invalid.Field("waitDelay", fmt.Sprintf("must be shorter than the render timeout of %s", renderTimeout))
		}
		pr.WaitDelayMs = d.Milliseconds()
	}
	if p.EmulatedMediaType != nil {
		switch strings.ToLower(strings.TrimSpace(*p.EmulatedMediaType)) {
		case "print":
		case "screen":
			pr.MediaScreen = true
		default:
			return PrintOptions{}, invalid.Field("emulatedMediaType", "must be print or screen")
		}
	}
	if p.Scale != nil {
		if s := *p.Scale; !(s >= 0.1 && s <= 2) {
			return PrintOptions{}, invalid.Field("scale", "must be between 0.1 and 2")
		}
		pr.Scale = *p.Scale
	}
	if pr.PageRanges, err = pageRanges(p.PageRanges); err != nil {
		return PrintOptions{}, err
	}
	pr.NoBackground = p.PrintBackground != nil && !*p.PrintBackground
	pr.Untagged = p.Tagged != nil && !*p.Tagged
	pr.Outline = p.Outline != nil && *p.Outline
	pr.Toc = p.Toc != nil && *p.Toc
	switch {
	case p.Split == nil:
	case *p.Split:
		pr.Split = jobspb.Split_SPLIT_ON
	default:
		pr.Split = jobspb.Split_SPLIT_OFF
	}
	pr.FailOnConsoleErrors = p.FailOnConsoleErrors != nil && *p.FailOnConsoleErrors
	pr.FailOnResourceErrors = p.FailOnResourceErrors != nil && *p.FailOnResourceErrors
	pr.FailOnAccessibilityErrors = p.FailOnAccessibilityErrors != nil && *p.FailOnAccessibilityErrors
	o := PrintOptions{Print: pr, Report: p.Report != nil && *p.Report}
	if o.Info, err = ParseMetadata(p.Metadata); err != nil {
		return PrintOptions{}, err
	}
	if o.Encryption, err = ParseEncryption(p.Encryption); err != nil {
		return PrintOptions{}, err
	}
	if o.Fetch, err = p.fetch(); err != nil {
		return PrintOptions{}, err
	}
	if o.Record, err = p.RecordRaw.Validate(); err != nil {
		return PrintOptions{}, err
	}
	steps := Steps{Info: o.Info, Encryption: o.Encryption, Record: o.Record}
	if err := ApplyStages(p.Stages, &steps); err != nil {
		return PrintOptions{}, err
	}
	if steps.Ordered {
		o.Info, o.Encryption, o.Record = steps.Info, steps.Encryption, steps.Record
		o.Stages, o.StepsOrdered, o.StageWatermark, o.Pages = steps.Order, true, steps.Watermark, steps.Pages
	}
	if err := CheckRecord(o.Record, o.Encryption, pr.Untagged); err != nil {
		return PrintOptions{}, err
	}
	// Each field is bounded; together they must still leave a job message
	// well under NATS's 1 MiB payload.
	if n := proto.Size(o.Print) + proto.Size(o.Info) + proto.Size(o.Encryption) + proto.Size(o.Fetch); n > MaxOptionsBytes {
		return PrintOptions{}, invalid.Input("The print options add up to %d bytes; at most %d.", n, MaxOptionsBytes).
			WithHint("Shorten the templates, headers, cookies or keywords.")
	}
	return o, nil
}

func template(field string, p *string) (string, error) {
	if p == nil {
		return "", nil
	}
	if len(*p) > MaxTemplateBytes {
		return "", invalid.Field(field, fmt.Sprintf("at most %d bytes", MaxTemplateBytes)).
			WithHint("Reference images and fonts by the name of an uploaded file instead of inlining them.")
	}
	return *p, nil
}

// text is an optional string field of at most max bytes, not blank when given.
func text(field string, p *string, max int) (string, error) {
	if p == nil {
		return "", nil
	}
	v := strings.TrimSpace(*p)
	if v == "" {
		return "", invalid.Field(field, "must not be empty")
	}
	if len(v) > max || !utf8.ValidString(v) {
		return "", invalid.Field(field, fmt.Sprintf("at most %d bytes of UTF-8", max))
	}
	return v, nil
}

var rangeRe = regexp.MustCompile(`^(\d+)(?:\s*-\s*(\d+))?$`)

// pageRanges checks "1-3, 5" and returns it in Chromium's form ("1-3,5").
// Pages beyond the document are found when it is printed.
func pageRanges(p *string) (string, error) {
	if p == nil {
		return "", nil
	}
	return PageRangesOf("pageRanges", *p)
}

// PageRangesOf checks field's pages and ranges ("1-3, 5"; at most 100
// items, each counting from 1, none reversed, none past page 100,000) and
// returns them in a canonical form ("1-3,5"); blank gives "". Pages beyond
// the document are found where the document is read.
func PageRangesOf(field, spec string) (string, error) {
	if strings.TrimSpace(spec) == "" {
		return "", nil
	}
	bad := invalid.Field(field, "must be pages and ranges such as 1-3,5 (pages count from 1)")
	parts := strings.Split(spec, ",")
	if len(parts) > maxRangeItems {
		return "", bad
	}
	out := make([]string, 0, len(parts))
	for _, part := range parts {
		m := rangeRe.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return "", bad
		}
		from, err := strconv.Atoi(m[1])
		if err != nil || from < 1 || from > maxPageNumber {
			return "", bad
		}
		if m[2] == "" {
			out = append(out, strconv.Itoa(from))
			continue
		}
		to, err := strconv.Atoi(m[2])
		if err != nil || to < from || to > maxPageNumber {
			return "", invalid.Field(field, fmt.Sprintf("range %s-%s ends before it starts or past page %d", m[1], m[2], maxPageNumber))
		}
		out = append(out, strconv.Itoa(from)+"-"+strconv.Itoa(to))
	}
	return strings.Join(out, ","), nil
}

// ParseMetadata validates DESIGN §6's metadata object; null or absent gives nil.
func ParseMetadata(raw json.RawMessage) (*jobspb.DocInfo, error) {
	if isNull(raw) {
		return nil, nil
	}
	var m struct {
		Title, Author, Subject, Creator *string
		Keywords                        json.RawMessage
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid.Field("metadata", "must be an object with title, author, subject, keywords, creator (strings)")
	}
	info := &jobspb.DocInfo{}
	for _, f := range []struct {
		name string
		in   *string
		out  *string
	}{{"title", m.Title, &info.Title}, {"author", m.Author, &info.Author}, {"subject", m.Subject, &info.Subject}, {"creator", m.Creator, &info.Creator}} {
		if f.in == nil {
			continue
		}
		if utf8.RuneCountInString(*f.in) > maxInfoChars || !utf8.ValidString(*f.in) {
			return nil, invalid.Field("metadata."+f.name, fmt.Sprintf("at most %d characters", maxInfoChars))
		}
		*f.out = strings.TrimSpace(*f.in)
	}
	if !isNull(m.Keywords) {
		var one string
		if err := json.Unmarshal(m.Keywords, &one); err == nil {
			info.Keywords = []string{one}
		} else if err := json.Unmarshal(m.Keywords, &info.Keywords); err != nil {
			return nil, invalid.Field("metadata.keywords", "must be a string or an array of strings")
		}
		if len(info.Keywords) > maxKeywords {
			return nil, invalid.Field("metadata.keywords", fmt.Sprintf("at most %d keywords", maxKeywords))
		}
		for _, k := range info.Keywords {
			if utf8.RuneCountInString(k) > maxInfoChars {
				return nil, invalid.Field("metadata.keywords", fmt.Sprintf("each at most %d characters", maxInfoChars))
			}
		}
	}
	return info, nil
}

// ParseEncryption validates DESIGN §6's encryption object; null or absent gives nil.
func ParseEncryption(raw json.RawMessage) (*jobspb.Encryption, error) {
	if isNull(raw) {
		return nil, nil
	}
	var e struct {
		UserPassword   *string `json:"userPassword"`
		OwnerPassword  *string `json:"ownerPassword"`
		AllowPrinting  *bool   `json:"allowPrinting"`
		AllowCopying   *bool   `json:"allowCopying"`
		AllowModifying *bool   `json:"allowModifying"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, invalid.Field("encryption", "must be an object with ownerPassword, and optionally userPassword, allowPrinting, allowCopying, allowModifying")
	}
	if e.OwnerPassword == nil || *e.OwnerPassword == "" {
		return nil, invalid.Field("encryption.ownerPassword", "is required")
	}
	out := &jobspb.Encryption{OwnerPassword: *e.OwnerPassword, AllowPrinting: true, AllowCopying: true}
	if e.UserPassword != nil {
		out.UserPassword = *e.UserPassword
	}
	for _, pw := range []struct{ field, v string }{{"encryption.ownerPassword", out.OwnerPassword}, {"encryption.userPassword", out.UserPassword}} {
		if len(pw.v) > maxPasswordBytes || !utf8.ValidString(pw.v) {
			return nil, invalid.Field(pw.field, fmt.Sprintf("at most %d bytes of UTF-8", maxPasswordBytes))
		}
	}
	if out.UserPassword != "" && out.UserPassword == out.OwnerPassword {
		return nil, invalid.Field("encryption.userPassword", "must differ from ownerPassword (the owner password would then give no more rights)")
	}
	if e.AllowPrinting != nil {
		out.AllowPrinting = *e.AllowPrinting
	}
	if e.AllowCopying != nil {
		out.AllowCopying = *e.AllowCopying
	}
	if e.AllowModifying != nil {
		out.AllowModifying = *e.AllowModifying
	}
	return out, nil
}

// headerToken is an HTTP header name (RFC 9110 token).
var headerToken = regexp.MustCompile(`^[!#$%&'*+\-.^_` + "`" + `|~0-9A-Za-z]+$`)

// fetch validates the options of a URL render: extra headers (none that
// would change where or how the request goes), cookies and user agent.
func (p PrintRaw) fetch() (*jobspb.PageURL, error) {
	f := &jobspb.PageURL{}
	if !isNull(p.ExtraHTTPHeaders) {
		if err := json.Unmarshal(p.ExtraHTTPHeaders, &f.ExtraHttpHeaders); err != nil {
			return nil, invalid.Field("extraHttpHeaders", "must be an object of header names to string values")
		}
		if len(f.ExtraHttpHeaders) > maxHeaders {
			return nil, invalid.Field("extraHttpHeaders", fmt.Sprintf("at most %d headers", maxHeaders))
		}
		for k, v := range f.ExtraHttpHeaders {
			field := "extraHttpHeaders." + k
			if !headerToken.MatchString(k) || len(k) > 256 {
				return nil, invalid.Field("extraHttpHeaders", fmt.Sprintf("%.64q is not a header name", k))
			}
			switch c := http.CanonicalHeaderKey(k); {
			case c == "Host" || c == "Content-Length" || c == "Transfer-Encoding" || c == "Connection" ||
				c == "Cookie" || c == "Upgrade" || c == "Te" || c == "Trailer" || strings.HasPrefix(c, "Proxy-") || strings.HasPrefix(c, "Sec-"):
				return nil, invalid.Field(field, "cannot be set (use cookies for cookies)")
			}
			if len(v) > maxHeaderBytes || strings.ContainsAny(v, "\r\n\x00") {
				return nil, invalid.Field(field, fmt.Sprintf("at most %d bytes, on one line", maxHeaderBytes))
			}
		}
	}
	if !isNull(p.Cookies) {
		var cs []struct {
			Name, Value  *string
			Domain, Path string
		}
		if err := json.Unmarshal(p.Cookies, &cs); err != nil {
			return nil, invalid.Field("cookies", "must be a list of {name, value, domain?, path?}")
		}
		if len(cs) > maxCookies {
			return nil, invalid.Field("cookies", fmt.Sprintf("at most %d cookies", maxCookies))
		}
		for i, c := range cs {
			field := fmt.Sprintf("cookies[%d]", i)
			if c.Name == nil || !headerToken.MatchString(*c.Name) {
				return nil, invalid.Field(field+".name", "is required: a cookie name")
			}
			if c.Value == nil {
				return nil, invalid.Field(field+".value", "is required")
			}
			if len(*c.Name)+len(*c.Value)+len(c.Domain)+len(c.Path) > maxCookieBytes || strings.ContainsAny(*c.Value+c.Domain+c.Path, "\r\n\x00;") {
				return nil, invalid.Field(field, fmt.Sprintf("at most %d bytes, without ; or line breaks", maxCookieBytes))
			}
			f.Cookies = append(f.Cookies, &jobspb.Cookie{Name: *c.Name, Value: *c.Value, Domain: c.Domain, Path: c.Path})
		}
	}
	if p.UserAgent != nil {
		ua := strings.TrimSpace(*p.UserAgent)
		if ua == "" || len(ua) > maxUserAgent || strings.ContainsAny(ua, "\r\n\x00") {
			return nil, invalid.Field("userAgent", fmt.Sprintf("1 to %d characters on one line", maxUserAgent))
		}
		f.UserAgent = ua
	}
	return f, nil
}
