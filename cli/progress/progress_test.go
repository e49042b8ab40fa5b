package progress

import (
	"strings"
	"testing"

	"github.com/docrender/docrender/client"
)

func TestRender(t *testing.T) {
	for _, tt := range []struct {
		p    client.Progress
		want string
	}{
		{client.Progress{Total: 4, Current: 0, Status: "processing"}, "b [----------] 0/4   0%"},
		{client.Progress{Total: 4, Current: 1, Status: "processing"}, "b [##--------] 1/4  25%"},
		{client.Progress{Total: 4, Current: 4, Status: "completed"}, "b [##########] 4/4 100% completed"},
		{client.Progress{Total: 0, Current: 0, Status: "processing"}, "b [----------] 0/0   0%"},
		{client.Progress{Total: 2, Current: 9, Status: "processing"}, "b [##########] 9/2 100%"},
	} {
		if got := Render("b", tt.p, 10); got != tt.want {
			t.Errorf("Render(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestModes(t *testing.T) {
	readings := []client.Progress{{Total: 2, Status: "processing"}, {Total: 2, Status: "processing"},
		{Total: 2, Current: 1, Status: "processing"}, {Total: 2, Current: 2, Status: "completed"}}
	for _, tt := range []struct {
		mode     Mode
		terminal bool
		want     string
	}{
		{Auto, false, "x: 0/2 processing\nx: 1/2 processing\nx: 2/2 completed\n"},
		{Lines, true, "x: 0/2 processing\nx: 1/2 processing\nx: 2/2 completed\n"},
		{None, true, ""},
	} {
		var b strings.Builder
		d := New(&b, tt.mode, tt.terminal, "x")
		for _, p := range readings {
			d.Update(p)
		}
		d.Close()
		if b.String() != tt.want {
			t.Errorf("%s (terminal %v): %q, want %q", tt.mode, tt.terminal, b.String(), tt.want)
		}
	}
	var b strings.Builder
	d := New(&b, Auto, true, "x")
	for _, p := range readings {
		d.Update(p)
	}
	d.Close()
	if got := b.String(); strings.Count(got, "\r\x1b[K") != 4 || !strings.HasSuffix(got, "2/2 100% completed\n") {
		t.Errorf("bar wrote %q", got)
	}
	if _, err := ParseMode("fancy"); err == nil {
		t.Error("ParseMode accepted fancy")
	}
}
