package qr

import (
	"strings"
	"testing"
)

func TestModules(t *testing.T) {
	for _, c := range []struct {
		data   string
		margin int
		want   int
	}{
		{"hello", 0, 21},                    // version 1
		{"hello", 4, 29},                    // plus 4 modules each side
		{"https://example.com/x1", 1, 27},   // version 2 in byte mode
		{strings.Repeat("a", 2331), 0, 177}, // version 40 at M
	} {
		o := NewOptions(c.data)
		o.Margin = c.margin
		if o.Size < c.want {
			o.Size = c.want
		}
		got, err := o.Modules()
		if err != nil || got != c.want {
			t.Errorf("Modules(%.10q, margin %d) = %d, %v; want %d", c.data, c.margin, got, err, c.want)
		}
	}
	if _, err := NewOptions("").Modules(); err == nil {
		t.Error("Modules of invalid options: no error")
	}
}
