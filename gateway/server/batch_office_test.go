package server

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// readOffice checks a batch document's office file: a name of a format the
// engine converts, base64 content within the upload bound once decoded,
// each refusal naming its field.
func TestReadOffice(t *testing.T) {
	str := func(s string) *string { return &s }
	b64 := func(n int) *string { return str(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", n)))) }
	const limit = 100
	for _, tc := range []struct {
		name      string
		in        batchOffice
		wantField string // "" accepted
		wantName  string
	}{
		{"docx", batchOffice{str("report.docx"), b64(10)}, "", "report.docx"},
		{"upper-case extension", batchOffice{str("Sheet.XLSX"), b64(10)}, "", "Sheet.XLSX"},
		{"a path keeps its base", batchOffice{str(`C:\docs\notes.odt`), b64(10)}, "", "notes.odt"},
		{"at the bound", batchOffice{str("a.txt"), b64(limit)}, "", "a.txt"},
		{"over the bound", batchOffice{str("a.txt"), b64(limit + 1)}, "d.content", ""},
		{"far over the bound", batchOffice{str("a.txt"), b64(10 * limit)}, "d.content", ""},
		{"no name", batchOffice{nil, b64(1)}, "d.fileName", ""},
		{"blank name", batchOffice{str("  "), b64(1)}, "d.fileName", ""},
		{"no extension", batchOffice{str("README"), b64(1)}, "d.fileName", ""},
		{"not an office format", batchOffice{str("a.png"), b64(1)}, "d.fileName", ""},
		{"a control character", batchOffice{str("a\x00.docx"), b64(1)}, "d.fileName", ""},
		{"no content", batchOffice{str("a.docx"), nil}, "d.content", ""},
		{"not base64", batchOffice{str("a.docx"), str("%%%")}, "d.content", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := readOffice("d", &tc.in, limit)
			if tc.wantField == "" {
				if err != nil || f.Name != tc.wantName {
					t.Fatalf("readOffice = %+v, %v; want %s", f, err, tc.wantName)
				}
				return
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Extra["field"] != tc.wantField {
				t.Fatalf("readOffice = %+v, %v; want a 400 naming %s", f, err, tc.wantField)
			}
		})
	}
}
