package office

import (
	"archive/zip"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// container is what a kind's bytes must look like before LibreOffice sees
// them. LibreOffice opens almost anything as plain text, so without this
// check a PNG named report.docx would come back as pages of mojibake.
type container int

const (
	zipContainer container = iota // OOXML and ODF
	cfbContainer                  // legacy Microsoft binary formats (and encrypted OOXML)
	rtfContainer
	textContainer
	anyContainer // formats LibreOffice sniffs well by itself (flat XML, WordPerfect, ...)
)

// containerOf says what a kind's bytes must be; false for a format the
// engine does not take (refused before it reaches a slot).
func containerOf(kind string) (container, bool) {
	switch kind {
	case "docx", "docm", "dotx", "dotm", "xlsx", "xlsm", "xltx", "xltm",
		"pptx", "pptm", "potx", "ppsx", "odt", "ods", "odp", "odg",
		"ott", "ots", "otp", "sxw", "sxc", "sxi":
		return zipContainer, true
	case "doc", "dot", "xls", "xlt", "ppt", "pps", "pot":
		return cfbContainer, true
	case "rtf":
		return rtfContainer, true
	case "txt", "csv":
		return textContainer, true
	case "fodt", "fods", "fodp", "fodg", "wpd", "wps", "xml", "vsd", "vsdx", "pub", "abw":
		return anyContainer, true
	}
	return 0, false
}

// kindOf is the lower-case extension of name, or "" if it has none.
func kindOf(name string) string {
	return strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
}

const (
	zipMagic = "PK\x03\x04"
	cfbMagic = "\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"
)

// checkInput refuses, in the client's words, what is plainly not the office
// document its name says, and a zip whose parts declare more bytes than
// maxInflated. The declared sizes can lie; the slot's time and memory bounds
// are what hold then, this check only spares a slot the obvious bomb.
func checkInput(in Input, maxInflated int64) (string, error) {
	name := in.Name
	kind := kindOf(name)
	bad := func(format string, a ...any) error {
		return &BadInputError{File: name, Reason: fmt.Sprintf(format, a...)}
	}
	if len(in.Data) == 0 {
		return "", bad("the file is empty")
	}
	c, ok := containerOf(kind)
	if !ok {
		if kind == "" {
			return "", bad("the file name has no extension; name it after its format (.docx, .xlsx, .odt, ...)")
		}
		return "", bad("%q files are not office documents this service converts", "."+kind)
	}
	data := in.Data
	switch c {
	case zipContainer:
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
	case cfbContainer:
		if !bytes.HasPrefix(data, []byte(cfbMagic)) {
			return "", bad("not a .%s document", kind)
		}
	case rtfContainer:
		if !bytes.HasPrefix(bytes.TrimLeft(data, "\xef\xbb\xbf \r\n\t"), []byte(`{\rtf`)) {
			return "", bad("not an RTF document (it does not start with {\\rtf)")
		}
	case textContainer:
		if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
			return "", bad("not a UTF-8 text file")
		}
	}
	return kind, nil
}
