package server

import (
	"mime"
	"testing"
)

// A stored file's name is cleaned where it was made; the header cleans it
// again for files stored before that, and gives both forms of RFC 6266.
func TestContentDisposition(t *testing.T) {
	for _, tc := range []struct {
		name, kind, in, header, parsed string
	}{
		{"plain", "attachment", "invoice-42.pdf", `attachment; filename="invoice-42.pdf"; filename*=UTF-8''invoice-42.pdf`, "invoice-42.pdf"},
		{"non-ASCII letters", "inline", "Überblick.pdf", `inline; filename="_berblick.pdf"; filename*=UTF-8''%C3%9Cberblick.pdf`, "Überblick.pdf"},
		{"quote and backslash", "attachment", `a"b\c.pdf`, `attachment; filename="a_b_c.pdf"; filename*=UTF-8''a%22b%5Cc.pdf`, `a"b\c.pdf`},
		{"bidi override", "attachment", "in\u202Evoice.pdf", `attachment; filename="invoice.pdf"; filename*=UTF-8''invoice.pdf`, "invoice.pdf"},
		{"zero-width and controls", "inline", "\uFEFFa\u200Bb\r\nc.pdf", `inline; filename="abc.pdf"; filename*=UTF-8''abc.pdf`, "abc.pdf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := contentDisposition(tc.kind, tc.in)
			if h != tc.header {
				t.Fatalf("contentDisposition(%q) = %q, want %q", tc.in, h, tc.header)
			}
			if k, p, err := mime.ParseMediaType(h); err != nil || k != tc.kind || p["filename"] != tc.parsed {
				t.Fatalf("parsed as %s %q (%v), want %q", k, p["filename"], err, tc.parsed)
			}
		})
	}
}
