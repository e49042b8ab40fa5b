// Package officefmt names the office formats the office engine converts
// (DESIGN §11), by file extension: the worker's engine checks each file
// against what its format's bytes must be, and the gateway refuses a batch
// document whose name says a format nobody converts before queuing it.
package officefmt

import (
	"path/filepath"
	"strings"
)

// Container is what a format's bytes must look like.
type Container int

const (
	// Zip: OOXML and ODF packages.
	Zip Container = iota
	// CFB: the legacy Microsoft binary formats (and encrypted OOXML).
	CFB
	// RTF documents.
	RTF
	// Text: UTF-8 text (txt, csv).
	Text
	// Any: formats LibreOffice sniffs well by itself (flat XML, WordPerfect, ...).
	Any
)

var formats = map[string]Container{}

func init() {
	for c, kinds := range map[Container][]string{
		Zip: {"docx", "docm", "dotx", "dotm", "xlsx", "xlsm", "xltx", "xltm",
			"pptx", "pptm", "potx", "ppsx", "odt", "ods", "odp", "odg",
			"ott", "ots", "otp", "sxw", "sxc", "sxi"},
		CFB:  {"doc", "dot", "xls", "xlt", "ppt", "pps", "pot"},
		RTF:  {"rtf"},
		Text: {"txt", "csv"},
		Any:  {"fodt", "fods", "fodp", "fodg", "wpd", "wps", "xml", "vsd", "vsdx", "pub", "abw"},
	} {
		for _, k := range kinds {
			formats[k] = c
		}
	}
}

// Kind is the lower-case extension of name without its dot, "" when it has none.
func Kind(name string) string {
	return strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
}

// ContainerOf says what the bytes of format kind (an extension, Kind) must
// be; false for a format the engine does not take.
func ContainerOf(kind string) (Container, bool) {
	c, ok := formats[kind]
	return c, ok
}

// Converted says whether a file named name is of a format the engine takes.
func Converted(name string) bool {
	_, ok := formats[Kind(name)]
	return ok
}
