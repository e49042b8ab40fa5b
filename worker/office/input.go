package office

import (
	"archive/zip"
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/docrender/docrender/pkg/officefmt"
)

const (
	zipMagic = "PK\x03\x04"
	cfbMagic = "\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"
)

// checkInput refuses, in the client's words, what is plainly not the office
// document its name says, and a zip whose parts declare more bytes than
// maxInflated. The declared sizes can lie; the slot's time and memory bounds
// are what hold then, this check only spares a slot the obvious bomb.
// LibreOffice opens almost anything as plain text, so without the check a
// PNG named report.docx would come back as pages of mojibake.
func checkInput(in Input, maxInflated int64) (string, error) {
	name := in.Name
	kind := officefmt.Kind(name)
	bad := func(format string, a ...any) error {
		return &BadInputError{File: name, Reason: fmt.Sprintf(format, a...)}
	}
	if len(in.Data) == 0 {
		return "", bad("the file is empty")
	}
	c, ok := officefmt.ContainerOf(kind)
	if !ok {
		if kind == "" {
			return "", bad("the file name has no extension; name it after its format (.docx, .xlsx, .odt, ...)")
		}
		return "", bad("%q files are not office documents this service converts", "."+kind)
	}
	data := in.Data
	switch c {
	case officefmt.Zip:
		if bytes.HasPrefix(data, []byte(cfbMagic)) && !strings.HasPrefix(kind, "o") {
			// An OOXML file saved with a password is a CFB container with
			// the encrypted package inside; LibreOffice asks for the
			// password, which the slot answers with "no".
			return kind, nil
		}
		if !bytes.HasPrefix(data, []byte(zipMagic)) {
			return "", bad("not a .%s document (it is not a ZIP package)", kind)
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return "", bad("not a .%s document (its ZIP package is damaged: %v)", kind, err)
		}
		var total uint64
		for _, f := range zr.File {
			total += f.UncompressedSize64
			if total > uint64(maxInflated) {
				return "", bad("its parts inflate to more than %d MiB", maxInflated>>20)
			}
		}
	case officefmt.CFB:
		if !bytes.HasPrefix(data, []byte(cfbMagic)) {
			return "", bad("not a .%s document", kind)
		}
	case officefmt.RTF:
		if !bytes.HasPrefix(bytes.TrimLeft(data, "\xef\xbb\xbf \r\n\t"), []byte(`{\rtf`)) {
			return "", bad("not an RTF document (it does not start with {\\rtf)")
		}
	case officefmt.Text:
		if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
			return "", bad("not a UTF-8 text file")
		}
	}
	return kind, nil
}
