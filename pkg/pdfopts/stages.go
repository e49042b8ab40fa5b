package pdfopts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

// Stage ops (DESIGN §11 `stages`): the post-processing steps of §6, §8 and
// §11 in an order of the caller's.
const (
	StagePages       = "pages"
	StageWatermark   = "watermark"
	StageMetadata    = "metadata"
	StageAttachments = "attachments"
	StagePDFA        = "pdfa"
	StagePDFUA       = "pdfua"
	StageEncrypt     = "encrypt"
	StageSign        = "sign"
)

// StageOps are every op, in §8's fixed order: the order of the steps when
// the caller gives none.
func StageOps() []string {
	return []string{StagePages, StageWatermark, StageMetadata, StageAttachments, StagePDFA, StagePDFUA, StageEncrypt, StageSign}
}

// maxStages bounds the list: every op at most once.
const maxStages = 8

// Steps are a request's post-processing options, wherever they were given:
// as options of their own or as stages.
type Steps struct {
	Watermark  *jobspb.Watermark
	Info       *jobspb.DocInfo
	Encryption *jobspb.Encryption
	Record     *jobspb.Record
	Pages      *jobspb.PagesTool
	// Order is the steps' order when stages was given (Ordered), else nil:
	// §8's fixed order.
	Order   []string
	Ordered bool
}

// ApplyStages reads the stages option into s. With stages, every step is
// given there, each op at most once with its option's fields inline
// ({"op":"watermark","text":"DRAFT"}, {"op":"pdfa","level":"3b"},
// {"op":"pdfua","lang":"en"}, {"op":"attachments","attachments":[...]},
// {"op":"pages","select":"1-2"}); an option of a step given beside stages
// is refused rather than placed somewhere. The order rules: nothing after
// sign or encrypt, not both, and after pdfa or pdfua only steps that keep
// the conformance (metadata, the other of the two, sign). Errors name
// stages[i] and the field.
func ApplyStages(raw json.RawMessage, s *Steps) error {
	if isNull(raw) {
		return nil
	}
	for field, given := range map[string]bool{"watermark": s.Watermark != nil, "metadata": s.Info != nil, "encryption": s.Encryption != nil,
		"pdfa": s.Record.GetPdfa() != "", "pdfua": s.Record.GetPdfua(), "attachments": len(s.Record.GetAttachments()) > 0,
		"sign": s.Record.GetSign() != nil, "einvoice": s.Record.GetEinvoice() != nil} {
		if given {
			return invalid.Field(field, "with stages, give every post-processing step in stages (einvoice has no stage: leave stages out)")
		}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return invalid.Field("stages", `must be a list of steps such as [{"op":"watermark","text":"DRAFT"},{"op":"pdfa","level":"3b"}]`)
	}
	if len(items) > maxStages {
		return invalid.Field("stages", fmt.Sprintf("at most %d steps, each op once", maxStages))
	}
	if s.Record == nil {
		s.Record = &jobspb.Record{}
	}
	s.Order, s.Ordered = []string{}, true
	for i, item := range items {
		at := fmt.Sprintf("stages[%d]", i)
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(item, &fields); err != nil || fields == nil {
			return invalid.Field(at, `must be an object with an "op"`)
		}
		var op string
		if err := json.Unmarshal(fields["op"], &op); err != nil || !slices.Contains(StageOps(), op) {
			return invalid.Field(at+".op", "must be one of "+strings.Join(StageOps(), ", "))
		}
		if slices.Contains(s.Order, op) {
			return invalid.Field(at+".op", op+" may come once")
		}
		if err := stageOrder(s.Order, op); err != nil {
			return invalid.Field(at+".op", err.Error())
		}
		delete(fields, "op")
		if err := s.parseStage(op, fields); err != nil {
			var ie *invalid.Error
			if errors.As(err, &ie) && ie.Field != "" {
				// The option's own name is the stage's: its fields are inline.
				name := map[string]string{StageEncrypt: "encryption"}[op]
				if name == "" {
					name = op
				}
				switch rest, ok := strings.CutPrefix(ie.Field, name+"."); {
				case ie.Field == name:
					ie.Field = at
				case ok:
					ie.Field = at + "." + rest
				default:
					ie.Field = at + "." + ie.Field
				}
			}
			return err
		}
		s.Order = append(s.Order, op)
	}
	return nil
}

// stageOrder says why op may not follow the steps before it.
func stageOrder(before []string, op string) error {
	for _, b := range before {
		switch {
		case b == StageSign || b == StageEncrypt:
			return fmt.Errorf("nothing may come after %s (it must be the last step)", b)
		case (b == StagePDFA || b == StagePDFUA) && !slices.Contains([]string{StageMetadata, StagePDFA, StagePDFUA, StageSign}, op):
			return fmt.Errorf("%s after %s would break its conformance: put %s before it", op, b, op)
		}
	}
	if (op == StageSign && slices.Contains(before, StageEncrypt)) || (op == StageEncrypt && slices.Contains(before, StageSign)) {
		return errors.New("sign and encrypt exclude each other")
	}
	return nil
}

// parseStage reads one step's inline fields with its option's own parser.
func (s *Steps) parseStage(op string, fields map[string]json.RawMessage) error {
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	switch op {
	case StagePages:
		var r pagesRaw
		if err := Decode(rest, &r); err != nil {
			return err
		}
		job := &jobspb.ToolJob{}
		if err := r.validate(job); err != nil {
			return err
		}
		s.Pages = job.GetPages()
	case StageWatermark:
		s.Watermark, err = ParseWatermark(rest)
	case StageMetadata:
		s.Info, err = ParseMetadata(rest)
	case StageEncrypt:
		s.Encryption, err = ParseEncryption(rest)
	case StageSign:
		s.Record.Sign, err = signature(rest)
	case StagePDFA:
		var r struct {
			Level *string `json:"level"`
		}
		if err := Decode(rest, &r); err != nil {
			return err
		}
		if r.Level == nil {
			return invalid.Field("level", `give the level: "2b", "2u", "3b" or "3u"`)
		}
		rec, err := RecordRaw{PDFA: r.Level}.Validate()
		if err != nil {
			return renamed(err, "pdfa", "level")
		}
		s.Record.Pdfa = rec.GetPdfa()
	case StagePDFUA:
		var r struct {
			Lang *string `json:"lang"`
		}
		if err := Decode(rest, &r); err != nil {
			return err
		}
		yes := true
		rec, err := RecordRaw{PDFUA: &yes, Lang: r.Lang}.Validate()
		if err != nil {
			return err
		}
		s.Record.Pdfua = true
		if rec.GetLang() != "" {
			s.Record.Lang = rec.GetLang()
		}
	case StageAttachments:
		var r struct {
			Attachments            json.RawMessage `json:"attachments"`
			AttachmentRelationship *string         `json:"attachmentRelationship"`
		}
		if err := Decode(rest, &r); err != nil {
			return err
		}
		rec, err := RecordRaw{Attachments: r.Attachments, AttachmentRelationship: r.AttachmentRelationship}.Validate()
		if err != nil {
			return err
		}
		// None inline: the request's uploaded attachments parts (CheckStages).
		s.Record.Attachments, s.Record.AttachmentRelationship = rec.GetAttachments(), rec.GetAttachmentRelationship()
	}
	return err
}

// InStages names an error about a step's option (sign.identity, found
// wanting by the gateway once the stages are parsed) after the step that
// carries it (stages[2].identity) when the step was given in stages;
// other errors pass unchanged.
func InStages(stages []string, err error) error {
	var ie *invalid.Error
	if !errors.As(err, &ie) {
		return err
	}
	for i, op := range stages {
		name := map[string]string{StageEncrypt: "encryption"}[op]
		if name == "" {
			name = op
		}
		if rest, ok := strings.CutPrefix(ie.Field, name+"."); ok {
			ie.Field = fmt.Sprintf("stages[%d].%s", i, rest)
		} else if ie.Field == name {
			ie.Field = fmt.Sprintf("stages[%d]", i)
		}
	}
	return err
}

// renamed gives an option's error the name the field has in its stage.
func renamed(err error, from, to string) error {
	var ie *invalid.Error
	if errors.As(err, &ie) && ie.Field == from {
		ie.Field = to
	}
	return err
}

// CheckStages checks what the whole request shows once its uploaded parts
// are in: an attachments step has files (inline or uploaded), and files
// have a step to be embedded in.
func CheckStages(s Steps) error {
	if !s.Ordered {
		return nil
	}
	i := slices.Index(s.Order, StageAttachments)
	switch n := len(s.Record.GetAttachments()); {
	case i >= 0 && n == 0:
		return invalid.Field(fmt.Sprintf("stages[%d].attachments", i), "give the files: [{fileName, content (base64), mimeType?, description?}] or upload attachments parts")
	case i < 0 && n > 0:
		return invalid.Field("stages", `the attachments need their step: add {"op":"attachments"}`)
	}
	return nil
}
