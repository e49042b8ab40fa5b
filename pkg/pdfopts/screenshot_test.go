package pdfopts

import (
	"errors"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/invalid"
)

// TestScreenshotOptions: the defaults, and each refusal naming its field
// before anything is queued.
func TestScreenshotOptions(t *testing.T) {
	o, err := ParseScreenshotOptions("", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if j := o.Job; j.Format != "png" || j.Width != DefaultShotWidth || j.Height != DefaultShotHeight || j.FullPage || j.Clip != nil || j.Source.GetPrint() == nil {
		t.Errorf("defaults %+v", j)
	}
	o, err = ParseScreenshotOptions(`{"format":"JPG","quality":70,"clip":{"x":1,"y":2,"width":3,"height":4},"emulatedMediaType":"print","waitForSelector":"#a","fileName":"f"}`, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if j := o.Job; j.Format != "jpeg" || j.Quality != 70 || j.Clip.GetHeight() != 4 || !j.MediaPrint || j.Source.GetPrint().GetWaitForSelector() != "#a" || o.FileName != "f" {
		t.Errorf("parsed %+v", j)
	}
	for _, tc := range []struct{ options, field string }{
		{`{"format":"gif"}`, "format"},
		{`{"format":"jpeg","quality":0}`, "quality"},
		{`{"quality":50}`, "quality"},
		{`{"format":"jpeg","omitBackground":true}`, "omitBackground"},
		{`{"width":100000}`, "width"},
		{`{"height":-1}`, "height"},
		{`{"width":4096,"height":16384}`, "height"},
		{`{"clip":{"x":0,"y":0,"width":10}}`, "clip"},
		{`{"clip":{"x":-5,"y":0,"width":10,"height":10}}`, "clip"},
		{`{"clip":{"x":0,"y":0,"width":5000,"height":10}}`, "clip"},
		{`{"clip":{"x":40000000,"y":0,"width":10,"height":10}}`, "clip"},
		{`{"fullPage":true,"clip":{"x":0,"y":0,"width":10,"height":10}}`, "clip"},
		{`{"emulatedMediaType":"tv"}`, "emulatedMediaType"},
		{`{"waitDelay":"2m"}`, "waitDelay"},
		{`{"margin":"1cm"}`, "margin"},
		{`{"fullPage":"yes"}`, "fullPage"},
	} {
		_, err := ParseScreenshotOptions(tc.options, time.Minute)
		var e *invalid.Error
		if !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("%s: %v, want a refusal naming %s", tc.options, err, tc.field)
		}
	}
}
