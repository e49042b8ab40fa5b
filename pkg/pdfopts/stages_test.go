package pdfopts

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/invalid"
)

func TestStages(t *testing.T) {
	for _, tc := range []struct {
		name, options string
		order         []string
		field         string // the refused field; "" when accepted
	}{
		{"no stages", `{"watermark":{"text":"X"}}`, nil, ""},
		{"the caller's order", `{"stages":[{"op":"pages","select":"2,1"},{"op":"watermark","text":"DRAFT"},{"op":"metadata","title":"T"},{"op":"pdfa","level":"2b"},{"op":"sign","identity":"acme"}]}`,
			[]string{"pages", "watermark", "metadata", "pdfa", "sign"}, ""},
		{"metadata after pdfa", `{"stages":[{"op":"pdfua","lang":"en"},{"op":"metadata","title":"T"}]}`, []string{"pdfua", "metadata"}, ""},
		{"no steps at all", `{"stages":[]}`, []string{}, ""},
		{"encrypt last", `{"stages":[{"op":"watermark","text":"A"},{"op":"encrypt","userPassword":"u","ownerPassword":"o"}]}`, []string{"watermark", "encrypt"}, ""},
		{"unknown op", `{"stages":[{"op":"shrink"}]}`, nil, "stages[0].op"},
		{"no op", `{"stages":[{"text":"A"}]}`, nil, "stages[0].op"},
		{"not a list", `{"stages":{"op":"pdfa"}}`, nil, "stages"},
		{"not an object", `{"stages":["pdfa"]}`, nil, "stages[0]"},
		{"op twice", `{"stages":[{"op":"watermark","text":"A"},{"op":"watermark","text":"B"}]}`, nil, "stages[1].op"},
		{"after sign", `{"stages":[{"op":"sign","identity":"acme"},{"op":"metadata","title":"T"}]}`, nil, "stages[1].op"},
		{"after encrypt", `{"stages":[{"op":"encrypt","userPassword":"u","ownerPassword":"o"},{"op":"watermark","text":"A"}]}`, nil, "stages[1].op"},
		{"sign and encrypt", `{"stages":[{"op":"encrypt","userPassword":"u","ownerPassword":"o"},{"op":"sign","identity":"acme"}]}`, nil, "stages[1].op"},
		{"watermark after pdfa", `{"stages":[{"op":"pdfa","level":"3b"},{"op":"watermark","text":"A"}]}`, nil, "stages[1].op"},
		{"pages after pdfua", `{"stages":[{"op":"pdfua"},{"op":"pages","delete":"1"}]}`, nil, "stages[1].op"},
		{"encrypt after pdfa", `{"stages":[{"op":"pdfa","level":"2b"},{"op":"encrypt","userPassword":"u","ownerPassword":"o"}]}`, nil, "stages[1].op"},
		{"a bad level", `{"stages":[{"op":"pdfa","level":"9z"}]}`, nil, "stages[0].level"},
		{"no level", `{"stages":[{"op":"pdfa"}]}`, nil, "stages[0].level"},
		{"a bad watermark", `{"stages":[{"op":"watermark","text":"A","opacity":7}]}`, nil, "stages[0].opacity"},
		{"a bad page range", `{"stages":[{"op":"pages","select":"3-1"}]}`, nil, "stages[0].select"},
		{"a rotation", `{"stages":[{"op":"pages","rotate":{"1":45}}]}`, nil, "stages[0].rotate"},
		{"a step beside stages", `{"watermark":{"text":"A"},"stages":[{"op":"pdfa","level":"2b"}]}`, nil, "watermark"},
		{"metadata beside stages", `{"metadata":{"title":"A"},"stages":[]}`, nil, "metadata"},
		{"einvoice beside stages", `{"einvoice":{"profile":"BASIC","xml":"<rsm:CrossIndustryInvoice xmlns:rsm=\"urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100\"/>"},"stages":[]}`, nil, "einvoice"},
		{"attachments without files", `{"stages":[{"op":"attachments"}]}`, []string{"attachments"}, "stages[0].attachments"},
		{"untagged PDF/UA", `{"tagged":false,"stages":[{"op":"pdfua","lang":"en"}]}`, nil, "tagged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseJSON(tc.options, "doc", 30*time.Second)
			if err == nil {
				err = CheckStages(o.Steps())
			}
			if tc.field != "" {
				var ie *invalid.Error
				if !errors.As(err, &ie) || ie.Field != tc.field {
					t.Fatalf("error %v, want one naming %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.Stages, tc.order) || o.StepsOrdered != (tc.order != nil) {
				t.Errorf("order %v (ordered %v), want %v", o.Stages, o.StepsOrdered, tc.order)
			}
		})
	}
}

// The steps' values land where the options' own do.
func TestStagesFillTheSteps(t *testing.T) {
	o, err := ParseJSON(`{"stages":[{"op":"pages","select":"2,1","rotate":{"1":90}},{"op":"watermark","text":"DRAFT"},{"op":"metadata","title":"T"},`+
		`{"op":"attachments","attachments":[{"fileName":"a.txt","content":"aGk="}]},{"op":"pdfa","level":"3B"},{"op":"sign","identity":"acme","reason":"ok"}]}`, "doc", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case o.Pages.GetSelect() != "2,1" || o.Pages.GetRotate()["1"] != 90:
		t.Errorf("pages %v", o.Pages)
	case o.Watermark.GetText() != "DRAFT":
		t.Errorf("watermark %v", o.Watermark)
	case o.Info.GetTitle() != "T":
		t.Errorf("metadata %v", o.Info)
	case o.Record.GetPdfa() != "3b" || o.Record.GetSign().GetReason() != "ok" || len(o.Record.GetAttachments()) != 1:
		t.Errorf("record %v", o.Record)
	}
	if err := CheckStages(o.Steps()); err != nil {
		t.Error(err)
	}
	if !strings.Contains(strings.Join(o.Stages, ","), "attachments,pdfa,sign") {
		t.Errorf("order %v", o.Stages)
	}
}

// TestInStages: an option's error found after parsing (the gateway's
// signing check) is named at its step when the step came in stages.
func TestInStages(t *testing.T) {
	for _, tc := range []struct {
		stages      []string
		field, want string
	}{
		{[]string{StageMetadata, StageSign}, "sign", "stages[1]"},
		{[]string{StageSign}, "sign.identity", "stages[0].identity"},
		{[]string{StageEncrypt}, "encryption.userPassword", "stages[0].userPassword"},
		{nil, "sign.identity", "sign.identity"},
		{[]string{StageMetadata}, "sign.level", "sign.level"},
		{[]string{StageSign}, "signature", "signature"},
	} {
		err := InStages(tc.stages, invalid.Field(tc.field, "wrong"))
		var ie *invalid.Error
		if !errors.As(err, &ie) || ie.Field != tc.want {
			t.Errorf("%v %s: %v, want field %q", tc.stages, tc.field, err, tc.want)
		}
	}
	if err := InStages([]string{StageSign}, nil); err != nil {
		t.Errorf("nil: %v", err)
	}
}
