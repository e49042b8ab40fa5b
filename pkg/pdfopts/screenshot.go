package pdfopts

// Options of POST /pdf/screenshot (DESIGN §11): the page's source and
// waits as generate takes them (DESIGN §6), and the image's own fields.
// Every bound on the image's size is judged here, before anything is
// queued; only what needs the loaded page (a full page or a clip past the
// page's own height) is judged by the worker, which names the same fields.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

// Bounds of a screenshot. The capture is a bitmap in Chromium's memory and
// then in the worker's (4 bytes a pixel), so its pixels are bounded as a
// whole as well as each side: a full page of the default width may be
// MaxShotHeight tall, a wide one less.
const (
	MaxShotWidth  = 4096
	MaxShotHeight = 16384
	// MaxShotPixels is 100 MB as RGBA: room for 1280 × 16384.
	MaxShotPixels = 25_000_000
	// DefaultShotWidth and DefaultShotHeight are the viewport a screenshot
	// gets unless it asks for another: the tabs' own (a laptop's screen).
	DefaultShotWidth  = 1280
	DefaultShotHeight = 800
)

// ScreenshotOptions is the validated options object of a screenshot.
type ScreenshotOptions struct {
	// FileName is the image's name without extension.
	FileName string
	Host     bool
	UserType string
	// Job carries the image's fields and, in Source, the page's print
	// options (its waits, checks and URL request fields in Fetch); the
	// caller fills in the bundle or the URL.
	Job   *jobspb.ScreenshotJob
	Fetch *jobspb.PageURL
}

// screenshotRaw is the options object as the client sends it: the fields
// of generate's that say how the page loads (DESIGN §6), and the image's.
type screenshotRaw struct {
	FileName *string `json:"fileName"`
	Host     *bool   `json:"host"`
	UserType *string `json:"userType"`

	Format         *string         `json:"format"`
	Quality        *int            `json:"quality"`
	FullPage       *bool           `json:"fullPage"`
	Clip           json.RawMessage `json:"clip"`
	Width          *int            `json:"width"`
	Height         *int            `json:"height"`
	OmitBackground *bool           `json:"omitBackground"`

	WaitForSelector      *string         `json:"waitForSelector"`
	WaitForExpression    *string         `json:"waitForExpression"`
	WaitDelay            *string         `json:"waitDelay"`
	EmulatedMediaType    *string         `json:"emulatedMediaType"`
	FailOnConsoleErrors  *bool           `json:"failOnConsoleErrors"`
	FailOnResourceErrors *bool           `json:"failOnResourceErrors"`
	ExtraHTTPHeaders     json.RawMessage `json:"extraHttpHeaders"`
	Cookies              json.RawMessage `json:"cookies"`
	UserAgent            *string         `json:"userAgent"`
}

// ParseScreenshotOptions validates a screenshot's options field (blank:
// every default). An option it does not take (generate's margin, say) is
// a 400 naming it, as the PDF tools' are. renderTimeout bounds waitDelay.
func ParseScreenshotOptions(s string, renderTimeout time.Duration) (ScreenshotOptions, error) {
	var r screenshotRaw
	if strings.TrimSpace(s) != "" {
		if err := DecodeStrict([]byte(s), &r); err != nil {
			return ScreenshotOptions{}, err
		}
	}
	o := ScreenshotOptions{Host: r.Host != nil && *r.Host}
	var err error
	if r.FileName != nil {
		if o.FileName, err = FileName(r.FileName, ""); err != nil {
			return o, err
		}
	}
	if o.UserType, err = UserType(r.UserType); err != nil {
		return o, err
	}
	// The page loads as generate's does: the same fields, the same checks.
	load, err := PrintRaw{WaitForSelector: r.WaitForSelector, WaitForExpression: r.WaitForExpression, WaitDelay: r.WaitDelay,
		FailOnConsoleErrors: r.FailOnConsoleErrors, FailOnResourceErrors: r.FailOnResourceErrors,
		ExtraHTTPHeaders: r.ExtraHTTPHeaders, Cookies: r.Cookies, UserAgent: r.UserAgent}.Validate(renderTimeout)
	if err != nil {
		return o, err
	}
	o.Fetch = load.Fetch
	j := &jobspb.ScreenshotJob{Source: &jobspb.RenderJob{Print: load.Print}, Format: "png",
		Width: DefaultShotWidth, Height: DefaultShotHeight, FullPage: r.FullPage != nil && *r.FullPage}
	o.Job = j
	if r.EmulatedMediaType != nil {
		switch strings.ToLower(strings.TrimSpace(*r.EmulatedMediaType)) {
		case "screen":
		case "print":
			j.MediaPrint = true
		default:
			return o, invalid.Field("emulatedMediaType", "must be screen or print")
		}
	}
	if r.Format != nil {
		if j.Format, err = ImageFormat("format", *r.Format); err != nil {
			return o, err
		}
	}
	if r.Quality != nil {
		if j.Format == "png" {
			return o, invalid.Field("quality", "applies to jpeg and webp only; png is lossless")
		}
		if *r.Quality < 1 || *r.Quality > 100 {
			return o, invalid.Field("quality", "must be from 1 to 100")
		}
		j.Quality = int32(*r.Quality)
	}
	if r.OmitBackground != nil && *r.OmitBackground {
		if j.Format == "jpeg" {
			return o, invalid.Field("omitBackground", "jpeg has no transparency: use png or webp")
		}
		j.OmitBackground = true
	}
	if r.Width != nil {
		if *r.Width < 1 || *r.Width > MaxShotWidth {
			return o, invalid.Field("width", fmt.Sprintf("must be from 1 to %d pixels", MaxShotWidth))
		}
		j.Width = int32(*r.Width)
	}
	if r.Height != nil {
		if *r.Height < 1 || *r.Height > MaxShotHeight {
			return o, invalid.Field("height", fmt.Sprintf("must be from 1 to %d pixels", MaxShotHeight))
		}
		j.Height = int32(*r.Height)
	}
	if int64(j.Width)*int64(j.Height) > MaxShotPixels {
		return o, invalid.Field("height", fmt.Sprintf("width × height is %d pixels; at most %d", int64(j.Width)*int64(j.Height), MaxShotPixels))
	}
	if !isNull(r.Clip) {
		if j.FullPage {
			return o, invalid.Field("clip", "give either clip or fullPage, not both")
		}
		if j.Clip, err = clip(r.Clip); err != nil {
			return o, err
		}
	}
	return o, nil
}

// clip validates a clip rectangle: inside the bounds of any capture, with
// at least a pixel each way. Whether it lies on the page the worker tells.
func clip(raw json.RawMessage) (*jobspb.Clip, error) {
	var c struct{ X, Y, Width, Height *float64 }
	if err := json.Unmarshal(raw, &c); err != nil || c.X == nil || c.Y == nil || c.Width == nil || c.Height == nil {
		return nil, invalid.Field("clip", "must be an object {x, y, width, height} in CSS pixels")
	}
	for _, v := range []float64{*c.X, *c.Y, *c.Width, *c.Height} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, invalid.Field("clip", "must hold numbers")
		}
	}
	switch {
	case *c.X < 0 || *c.Y < 0:
		return nil, invalid.Field("clip", "x and y must not be negative")
	case *c.Width < 1 || *c.Height < 1:
		return nil, invalid.Field("clip", "width and height must be at least 1 pixel")
	case *c.Width > MaxShotWidth || *c.Height > MaxShotHeight || *c.Width**c.Height > MaxShotPixels:
		return nil, invalid.Field("clip", fmt.Sprintf("at most %d × %d pixels, %d in all", MaxShotWidth, MaxShotHeight, MaxShotPixels))
	case *c.X+*c.Width > maxPageCSSPixels || *c.Y+*c.Height > maxPageCSSPixels:
		return nil, invalid.Field("clip", "lies outside any page")
	}
	return &jobspb.Clip{X: *c.X, Y: *c.Y, Width: *c.Width, Height: *c.Height}, nil
}

// maxPageCSSPixels is past the end of any page a browser lays out
// (Chromium's layout units end at 2^25 pixels).
const maxPageCSSPixels = 1 << 25
