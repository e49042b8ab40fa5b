package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/docrender/docrender/client"
)

// stagesFlag is --stages: DESIGN §11's post-processing steps in the
// caller's order, sent as the option stages. Its value is the JSON list
// ([{"op":"watermark","text":"DRAFT"},{"op":"pdfa","level":"2b"}]), or
// @FILE for a file that holds it. The command line checks only that it is
// a list of objects; the service checks the steps and names a bad one
// (stages[1].op) in its answer.
type stagesFlag struct {
	value string
	set   bool
}

func (s *stagesFlag) String() string { return s.value }

func (s *stagesFlag) Set(v string) error {
	if s.set {
		return errors.New("given twice: put every step in one list")
	}
	s.value, s.set = v, true
	return nil
}

func addStagesFlag(fs *flag.FlagSet) *stagesFlag {
	s := &stagesFlag{}
	fs.Var(s, "stages", "")
	return s
}

// stagesExample is a list of steps, for messages.
const stagesExample = `[{"op":"watermark","text":"DRAFT"},{"op":"pdfa","level":"2b"}]`

// steps are the steps given, nil when the flag was not (an empty list
// when it was [], which is no step at all).
func (s *stagesFlag) steps() ([]client.Stage, error) {
	if !s.set {
		return nil, nil
	}
	text, from := s.value, "--stages"
	if name, ok := strings.CutPrefix(s.value, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, inputErrorf("--stages: %v", err)
		}
		text, from = string(b), "--stages "+s.value
	}
	list, err := decodeStages([]byte(text))
	if err != nil {
		msg := from + ": want a JSON list of steps such as " + stagesExample + ": " + err.Error()
		if from != "--stages" {
			return nil, inputErrorf("%s", msg)
		}
		return nil, usageErrorf("%s", msg)
	}
	return list, nil
}

// decodeStages reads a JSON list of objects, numbers kept as written.
func decodeStages(b []byte) ([]client.Stage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' {
		return nil, errors.New("not a list")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw []json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("something follows the list")
	}
	list := make([]client.Stage, 0, len(raw))
	for i, r := range raw {
		d := json.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		var st client.Stage
		if err := d.Decode(&st); err != nil || st == nil {
			return nil, errors.New("step " + strconv.Itoa(i+1) + ` is not an object ({"op": ...})`)
		}
		list = append(list, st)
	}
	return list, nil
}

// stagesHelp is the help of --stages; %s says what the steps run on.
const stagesHelp = `
steps in your order (DESIGN §11):
  --stages JSON   the post-processing steps run on %s, in this
                  order, as a JSON list, or @FILE.json for a file holding
                  one: [{"op":"pages","select":"2,1"},{"op":"watermark",
                  "text":"COPY"},{"op":"metadata","title":"T"},{"op":"pdfa",
                  "level":"2b"},{"op":"sign","identity":"acme"}]. Ops: pages,
                  watermark, metadata, attachments, pdfa, pdfua, encrypt,
                  sign, each at most once with its option's fields inline;
                  nothing after sign or encrypt. A step the service refuses
                  is named in its answer (field: stages[1].op).
`

// pdfStepsFlags are the flags of a PDF tool whose output is a PDF: its
// --stages, and --attach for an attachments step without files of its own.
type pdfStepsFlags struct {
	*stagesFlag
	attach multiFlag
}

func addPDFStepsFlags(fs *flag.FlagSet) *pdfStepsFlags {
	p := &pdfStepsFlags{stagesFlag: addStagesFlag(fs)}
	fs.Var(&p.attach, "attach", "")
	return p
}

// pdfSteps are the steps of a PDF tool's request, with the files of
// --attach as uploads.
func (p *pdfStepsFlags) pdfSteps() (client.PDFSteps, error) {
	list, err := p.steps()
	if err != nil {
		return client.PDFSteps{}, err
	}
	out := client.PDFSteps{Stages: list}
	for _, f := range p.attach {
		if err := localFile("--attach", f); err != nil {
			return client.PDFSteps{}, err
		}
		out.Attachments = append(out.Attachments, client.UploadFile(f, ""))
	}
	return out, nil
}

// toolAttachHelp follows stagesHelp on the tools whose output is a PDF.
const toolAttachHelp = `  --attach FILE   a file for an attachments step without a list of its
                  own ({"op":"attachments"}), repeatable; without --stages
                  it is embedded after the tool
`

// stagesAttachHelp follows stagesHelp where --attach uploads files.
const stagesAttachHelp = `                  An attachments step without a list of its own embeds the
                  files of --attach. With --stages every step is in it:
                  --pdfa, --pdfua, --sign, or a watermark or encryption
                  --option beside it is refused
`
