package pdfopts

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

func TestParseToolOptions(t *testing.T) {
	tests := []struct {
		op, options string
		want        *jobspb.ToolJob
	}{
		{ToolSplit, `{"ranges":" 1-3, 4 - 9 "}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Split{Split: &jobspb.SplitTool{Ranges: "1-3,4-9"}}}},
		{ToolSplit, `{"every":2}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Split{Split: &jobspb.SplitTool{Every: 2}}}},
		{ToolPages, `{"select":"3,1-2","rotate":{"2-3":90,"1":-90},"delete":"ALL"}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Pages{Pages: &jobspb.PagesTool{
			Select: "3,1-2", Rotate: map[string]int32{"2-3": 90, "1": 270}, Delete: "all"}}}},
		{ToolPages, `{"rotate":{"1-2":90,"1 - 2":180}}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Pages{Pages: &jobspb.PagesTool{Rotate: map[string]int32{"1-2": 270}}}}},
		{ToolFlatten, ``, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Flatten{Flatten: &jobspb.FlattenTool{}}}},
		{ToolOptimize, `{}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Optimize{Optimize: &jobspb.OptimizeTool{ImageQuality: 75, MaxImageDpi: 150}}}},
		{ToolOptimize, `{"imageQuality":40,"maxImageDpi":0}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Optimize{Optimize: &jobspb.OptimizeTool{ImageQuality: 40}}}},
		{ToolMetadata, `{"metadata":{"title":" T ","keywords":"a"}}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Metadata{Metadata: &jobspb.MetadataTool{Info: &jobspb.DocInfo{Title: "T", Keywords: []string{"a"}}}}}},
		{ToolText, ``, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Text{Text: &jobspb.TextTool{}}}},
		{ToolText, `{"format":"Markdown","pages":"2,1"}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Text{Text: &jobspb.TextTool{Markdown: true, Pages: "2,1"}}}},
		{ToolImages, `{}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Images{Images: &jobspb.ImagesTool{Format: "png", Dpi: 72}}}},
		{ToolImages, `{"format":"jpg","dpi":600,"pages":"1-2"}`, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Images{Images: &jobspb.ImagesTool{Format: "jpeg", Dpi: 600, Pages: "1-2"}}}},
	}
	for _, tc := range tests {
		o, err := ParseToolOptions(tc.op, tc.options)
		if err != nil {
			t.Errorf("%s %s: %v", tc.op, tc.options, err)
			continue
		}
		if !proto.Equal(o.Job, tc.want) {
			t.Errorf("%s %s: %v, want %v", tc.op, tc.options, o.Job, tc.want)
		}
	}

	// The tools that make a PDF carry their stages, unparsed, to the
	// gateway (which reads them with the uploaded parts).
	for _, op := range []string{ToolSplit, ToolPages, ToolFlatten, ToolOptimize, ToolMetadata} {
		opts := map[string]string{ToolSplit: `"every":1,`, ToolPages: `"select":"1",`, ToolMetadata: `"metadata":{"title":"T"},`}[op]
		o, err := ParseToolOptions(op, `{`+opts+`"stages":[{"op":"pdfa","level":"2b"}]}`)
		if err != nil || string(o.Stages) != `[{"op":"pdfa","level":"2b"}]` {
			t.Errorf("%s: stages %s, %v", op, o.Stages, err)
		}
	}
	if o, err := ParseToolOptions(ToolFlatten, `{"stages":null}`); err != nil || o.Stages != nil {
		t.Errorf("stages null: %s, %v", o.Stages, err)
	}

	o, err := ParseToolOptions(ToolFlatten, `{"fileName":"out.pdf","host":true,"userType":"Registered"}`)
	if err != nil || o.FileName != "out" || !o.Host || o.UserType != "registered" {
		t.Errorf("common options: %+v %v", o, err)
	}
}

// TestParseToolOptionsRefused: every refusal names the field to fix.
func TestParseToolOptionsRefused(t *testing.T) {
	tests := []struct{ op, options, field string }{
		{ToolSplit, `{}`, "ranges"},
		{ToolSplit, `{"ranges":"1-3","every":2}`, "ranges"},
		{ToolSplit, `{"ranges":"3-1"}`, "ranges"},
		{ToolSplit, `{"ranges":"0-2"}`, "ranges"},
		{ToolSplit, `{"ranges":"1-x"}`, "ranges"},
		{ToolSplit, `{"ranges":"all"}`, "ranges"},
		{ToolSplit, `{"every":0}`, "every"},
		{ToolSplit, `{"every":"2"}`, "every"},
		{ToolSplit, `{"every":1.5}`, "every"},
		{ToolSplit, `{"pages":"1"}`, "pages"},
		{ToolPages, `{}`, "select"},
		{ToolPages, `{"select":"1,,2"}`, "select"},
		{ToolPages, `{"delete":"2-1"}`, "delete"},
		{ToolPages, `{"rotate":{"1":45}}`, "rotate"},
		{ToolPages, `{"rotate":{"x":90}}`, "rotate"},
		{ToolPages, `{"rotate":{"":90}}`, "rotate"},
		{ToolPages, `{"rotate":[90]}`, "rotate"},
		{ToolFlatten, `{"flat":true}`, "flat"},
		{ToolFlatten, `{"host":"yes"}`, "host"},
		{ToolSplit, `{"every":1,"host":"yes"}`, "host"},
		{ToolOptimize, `{"fileName":3}`, "fileName"},
		{ToolOptimize, `{"imageQuality":0}`, "imageQuality"},
		{ToolOptimize, `{"imageQuality":101}`, "imageQuality"},
		{ToolOptimize, `{"maxImageDpi":-1}`, "maxImageDpi"},
		{ToolMetadata, `{}`, "metadata"},
		{ToolMetadata, `{"metadata":{"keywords":3}}`, "metadata.keywords"},
		{ToolText, `{"format":"html"}`, "format"},
		{ToolText, `{"pages":"0"}`, "pages"},
		{ToolImages, `{"dpi":601}`, "dpi"},
		{ToolImages, `{"dpi":0}`, "dpi"},
		{ToolImages, `{"format":"gif"}`, "format"},
		{ToolImages, `{"dpis":100}`, "dpis"},
		{ToolImages, `{"userType":"admin"}`, "userType"},
		{ToolImages, `{"fileName":"  "}`, "fileName"},
		{ToolText, `{"stages":[{"op":"watermark","text":"X"}]}`, "stages"},
		{ToolImages, `{"stages":[]}`, "stages"},
	}
	for _, tc := range tests {
		_, err := ParseToolOptions(tc.op, tc.options)
		var bad *invalid.Error
		if !errors.As(err, &bad) || bad.Field != tc.field {
			t.Errorf("%s %s: %v, want a refusal naming %q", tc.op, tc.options, err, tc.field)
		}
	}
	for _, s := range []string{`[]`, `{"ranges":"1"} x`, `{`} {
		if _, err := ParseToolOptions(ToolSplit, s); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

func TestExpandPages(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []int
	}{{"", nil}, {"all", nil}, {"3,1-2", []int{3, 1, 2}}, {" 2 - 4 ", []int{2, 3, 4}}} {
		got, err := ExpandPages("pages", tc.spec, 10)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.spec, got, err, tc.want)
		}
	}
	// Bounded before anything is listed.
	for _, spec := range []string{"1-11", "1-100000", "0", "x"} {
		var bad *invalid.Error
		if _, err := ExpandPages("pages", spec, 10); !errors.As(err, &bad) || bad.Field != "pages" {
			t.Errorf("%q: %v", spec, err)
		}
	}
}
