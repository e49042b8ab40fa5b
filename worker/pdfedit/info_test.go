package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

// chromiumPDF is two pages Chromium printed from an HTML document whose
// <title> is chromiumTitle; the pages hold CHROMEPAGE01 and CHROMEPAGE02.
func chromiumPDF(tb testing.TB) []byte {
	tb.Helper()
	return readFile(tb, filepath.Join("testdata", "chromium.pdf"))
}

const (
	chromiumTitle   = "Quarterly Report from HTML"
	chromiumCreator = "HeadlessChrome" // part of Chromium's user agent, its Creator
)

// pdfinfoFields is pdfinfo's "Key: value" lines of the PDF at path, in
// UTF-8; extra arguments go first (-upw, -opw).
func pdfinfoFields(tb testing.TB, path string, args ...string) map[string]string {
	tb.Helper()
	out := run(tb, "pdfinfo", append(append([]string{"-enc", "UTF-8"}, args...), path)...)
	fields := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

func withInfo(tb testing.TB, in []byte, info *jobspb.DocInfo) []byte {
	tb.Helper()
	var out bytes.Buffer
	if err := SetInfo(context.Background(), bytes.NewReader(in), &out, info); err != nil {
		tb.Fatalf("SetInfo: %v", err)
	}
	return out.Bytes()
}

// TestSetInfo checks with pdfinfo that the fields given replace the
// document's and the fields left empty keep it (Chromium's <title>).
func TestSetInfo(t *testing.T) {
	needTools(t, "pdfinfo", "pdftotext", "qpdf")
	all := &jobspb.DocInfo{Title: "Annual Report", Author: "Jane Doe", Subject: "Finances 2024",
		Keywords: []string{"finance", "annual", "report"}, Creator: "Billing System"}
	tests := []struct {
		name string
		in   []byte
		info *jobspb.DocInfo
		want map[string]string // pdfinfo field → value; "" means absent
	}{
		{"all fields over Chromium's", chromiumPDF(t), all, map[string]string{
			"Title": "Annual Report", "Author": "Jane Doe", "Subject": "Finances 2024",
			"Keywords": "finance, annual, report", "Creator": "Billing System"}},
		{"no title keeps <title>", chromiumPDF(t), &jobspb.DocInfo{Author: "Jane Doe", Keywords: []string{"one"}},
			map[string]string{"Title": chromiumTitle, "Author": "Jane Doe", "Keywords": "one", "Subject": ""}},
		{"blank fields keep Chromium's", chromiumPDF(t), &jobspb.DocInfo{Title: "  ", Creator: "", Subject: "S"},
			map[string]string{"Title": chromiumTitle, "Subject": "S"}},
		{"no Info dictionary yet", rawPDF("RAW", 2, 3), all, map[string]string{
			"Title": "Annual Report", "Author": "Jane Doe", "Subject": "Finances 2024",
			"Keywords": "finance, annual, report", "Creator": "Billing System"}},
		{"object streams", qpdfPDF(t, "QPDF", 2), &jobspb.DocInfo{Title: "From qpdf"}, map[string]string{"Title": "From qpdf"}},
		{"any language", chromiumPDF(t), &jobspb.DocInfo{Title: "Über – 日本語のタイトル", Author: "Zoë (née Ünal) \\ )(",
			Keywords: []string{" spaced ", "", "ключ"}},
			map[string]string{"Title": "Über – 日本語のタイトル", "Author": "Zoë (née Ünal) \\ )(", "Keywords": "spaced, ключ"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tmpPDF(t, withInfo(t, tt.in, tt.info))
			got := pdfinfoFields(t, path)
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("pdfinfo %s = %q, want %q", k, got[k], want)
				}
			}
			if tt.info.Creator == "" && bytes.Contains(tt.in, []byte(chromiumCreator)) && !strings.Contains(got["Creator"], chromiumCreator) {
				t.Errorf("Creator %q: Chromium's was lost", got["Creator"])
			}
			if want := pdfinfoPages(t, tmpPDF(t, tt.in)); pdfinfoPages(t, path) != want {
				t.Errorf("page count changed from %d", want)
			}
			run(t, "qpdf", "--check", path)
		})
	}
}

// TestSetInfoKeepsContent: the pages come through with their text.
func TestSetInfoKeepsContent(t *testing.T) {
	needTools(t, "pdftotext")
	path := tmpPDF(t, withInfo(t, chromiumPDF(t), &jobspb.DocInfo{Title: "T"}))
	for p, label := range []string{"CHROMEPAGE01", "CHROMEPAGE02"} {
		if text := pageText(t, path, p+1); !strings.Contains(text, label) {
			t.Errorf("page %d: %q lacks %s", p+1, firstLine(text), label)
		}
	}
}

// TestSetInfoNothing: nil or empty information copies the input as it is.
func TestSetInfoNothing(t *testing.T) {
	in := chromiumPDF(t)
	for _, info := range []*jobspb.DocInfo{nil, {}, {Title: " ", Keywords: []string{"", " "}}} {
		if got := withInfo(t, in, info); !bytes.Equal(got, in) {
			t.Errorf("info %v: output differs from the input", info)
		}
	}
}

func TestSetInfoErrors(t *testing.T) {
	info := &jobspb.DocInfo{Title: "T"}
	var be *BadInputError
	if err := SetInfo(context.Background(), bytes.NewReader([]byte("not a pdf")), &bytes.Buffer{}, info); !errors.As(err, &be) {
		t.Errorf("not a PDF: err = %v, want *BadInputError", err)
	}
	good := rawPDF("T", 2, 3)
	if err := SetInfo(context.Background(), bytes.NewReader(good[:len(good)/2]), &bytes.Buffer{}, info); !errors.As(err, &be) {
		t.Errorf("truncated: err = %v, want *BadInputError", err)
	}
	if err := SetInfo(context.Background(), bytes.NewReader(good), nil, info); err == nil {
		t.Error("nil writer: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SetInfo(ctx, bytes.NewReader(good), &bytes.Buffer{}, info); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}
