package commands

import (
	"encoding/base64"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docrender/docrender/client"
)

// recordFlags are the flags of DESIGN §8 (documents of record) on render,
// merge and batch. They are shorthands for options: --pdfa 3b is
// --option pdfa=3b, --sign acme is --option sign.identity=acme, so they
// combine with --option (--option sign.visible.x=50 adds to --sign).
// --attach and --einvoice-xml name local files: uploaded as the form parts
// attachments and factur-x.xml (render, merge), or put in the JSON
// options (batch). --stages (DESIGN §11) is the option stages: the steps
// of §8 in an order of the caller's.
type recordFlags struct {
	pdfa, lang, relationship    string
	einvoice, einvoiceXML       string
	sign, signLevel, signReason string
	signLocation, signContact   string
	pdfua                       bool
	attach                      multiFlag
	stages                      stagesFlag
}

func addRecordFlags(fs *flag.FlagSet) *recordFlags {
	r := &recordFlags{}
	fs.StringVar(&r.pdfa, "pdfa", "", "")
	fs.BoolVar(&r.pdfua, "pdfua", false, "")
	fs.StringVar(&r.lang, "lang", "", "")
	fs.Var(&r.attach, "attach", "")
	fs.StringVar(&r.relationship, "attachment-relationship", "", "")
	fs.StringVar(&r.einvoice, "einvoice", "", "")
	fs.StringVar(&r.einvoiceXML, "einvoice-xml", "", "")
	fs.StringVar(&r.sign, "sign", "", "")
	fs.StringVar(&r.signLevel, "sign-level", "", "")
	fs.StringVar(&r.signReason, "sign-reason", "", "")
	fs.StringVar(&r.signLocation, "sign-location", "", "")
	fs.StringVar(&r.signContact, "sign-contact", "", "")
	fs.Var(&r.stages, "stages", "")
	return r
}

// apply sets the flags' options in m, the --option object; a flag wins
// over an --option of the same field.
func (r *recordFlags) apply(m map[string]any) error {
	if r.einvoiceXML != "" && r.einvoice == "" {
		return usageErrorf("--einvoice-xml needs --einvoice PROFILE (MINIMUM, BASIC WL, BASIC, EN 16931, EXTENDED or XRECHNUNG)")
	}
	if r.sign == "" && (r.signLevel != "" || r.signReason != "" || r.signLocation != "" || r.signContact != "") {
		return usageErrorf("--sign-level, --sign-reason, --sign-location and --sign-contact need --sign IDENTITY")
	}
	set := []struct {
		path []string
		v    any
		on   bool
	}{
		{[]string{"pdfa"}, r.pdfa, r.pdfa != ""},
		{[]string{"pdfua"}, true, r.pdfua},
		{[]string{"lang"}, r.lang, r.lang != ""},
		{[]string{"attachmentRelationship"}, r.relationship, r.relationship != ""},
		{[]string{"einvoice", "profile"}, r.einvoice, r.einvoice != ""},
		{[]string{"sign", "identity"}, r.sign, r.sign != ""},
		{[]string{"sign", "level"}, strings.ToUpper(r.signLevel), r.signLevel != ""},
		{[]string{"sign", "reason"}, r.signReason, r.signReason != ""},
		{[]string{"sign", "location"}, r.signLocation, r.signLocation != ""},
		{[]string{"sign", "contactInfo"}, r.signContact, r.signContact != ""},
	}
	for _, s := range set {
		if !s.on {
			continue
		}
		if err := setPath(m, s.path, s.v); err != nil {
			return usageErrorf("--%s: %v", s.path[0], err)
		}
	}
	steps, err := r.stages.steps()
	if err != nil {
		return err
	}
	if steps != nil {
		m["stages"] = steps
	}
	return nil
}

// localFile checks that path, named by flag, is a file that can be read.
func localFile(flagName, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return inputErrorf("%s: %v", flagName, err)
	}
	if !st.Mode().IsRegular() {
		return inputErrorf("%s: %s is not a file", flagName, path)
	}
	return nil
}

// uploads are the files of --attach and --einvoice-xml as render and merge
// send them: form parts, read when the request is sent.
func (r *recordFlags) uploads() ([]client.Upload, *client.Upload, error) {
	var att []client.Upload
	for _, p := range r.attach {
		if err := localFile("--attach", p); err != nil {
			return nil, nil, err
		}
		att = append(att, client.UploadFile(p, ""))
	}
	if r.einvoiceXML == "" {
		return att, nil, nil
	}
	if err := localFile("--einvoice-xml", r.einvoiceXML); err != nil {
		return nil, nil, err
	}
	x := client.UploadFile(r.einvoiceXML, "factur-x.xml")
	return att, &x, nil
}

// inline puts the files of --attach and --einvoice-xml into m as a batch
// sends them: options.attachments [{fileName, content (base64)}] and
// options.einvoice.xml.
func (r *recordFlags) inline(m map[string]any) error {
	if len(r.attach) > 0 {
		list, _ := m["attachments"].([]any)
		for _, p := range r.attach {
			if err := localFile("--attach", p); err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return inputErrorf("--attach: %v", err)
			}
			list = append(list, map[string]any{"fileName": filepath.Base(p), "content": base64.StdEncoding.EncodeToString(b)})
		}
		m["attachments"] = list
	}
	if r.einvoiceXML != "" {
		if err := localFile("--einvoice-xml", r.einvoiceXML); err != nil {
			return err
		}
		b, err := os.ReadFile(r.einvoiceXML)
		if err != nil {
			return inputErrorf("--einvoice-xml: %v", err)
		}
		if err := setPath(m, []string{"einvoice", "xml"}, string(b)); err != nil {
			return usageErrorf("--einvoice-xml: %v", err)
		}
	}
	return nil
}

// documentInvoices gives each batch document with an XML file of its own
// name beside it (invoice-7.html, invoice-7.xml) that XML as its own
// e-invoice, with the profile of --einvoice. Without --einvoice-xml (an
// XML for every other document) each document needs its own; the
// options then carry no e-invoice of their own (m loses the profile
// apply put there: the service wants an e-invoice's XML where it is).
func (r *recordFlags) documentInvoices(dir string, docs []client.BatchDocument, m map[string]any) error {
	if r.einvoice == "" {
		return nil
	}
	shared := r.einvoiceXML != ""
	if e, ok := m["einvoice"].(map[string]any); ok && e["xml"] == nil && !shared {
		delete(m, "einvoice")
	}
	for i := range docs {
		p := filepath.Join(dir, docs[i].FileName+".xml")
		b, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && shared:
			continue
		case errors.Is(err, fs.ErrNotExist):
			return inputErrorf("--einvoice: %s.html has no e-invoice XML: put it beside it as %s.xml, or give --einvoice-xml FILE for the documents without one",
				docs[i].FileName, docs[i].FileName)
		case err != nil:
			return inputErrorf("%v", err)
		}
		if docs[i].PrintOptions == nil {
			docs[i].PrintOptions = &client.PrintOptions{}
		}
		docs[i].EInvoice = &client.EInvoice{Profile: r.einvoice, XML: string(b)}
	}
	return nil
}
