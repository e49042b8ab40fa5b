package ids

import "testing"

func TestNewIsValidAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := New()
		if !Valid(id) {
			t.Fatalf("New() = %q, not Valid", id)
		}
		if seen[id] {
			t.Fatalf("New() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"AAAAAAAAAAAAAAAAAAAAAA", true},
		{"abcdefghijklmnopqrs-_9", true},
		{"", false},
		{"AAAAAAAAAAAAAAAAAAAAA", false},   // 21
		{"AAAAAAAAAAAAAAAAAAAAAAA", false}, // 23
		{"AAAAAAAAAAAAAAAAAAAAA/", false},
		{"AAAAAAAAAAAAAAAAAAAAA.", false},
		{"../../../../etc/passwd", false},
		{"AAAAAAAAAAAAAAAAAAAAA\x00", false},
		{"AAAAAAAAAAAAAAAAAAAAé", false}, // 22 bytes, not ASCII
	}
	for _, tc := range tests {
		if got := Valid(tc.in); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// No ID starts with '-', which a command line would take for a flag.
func TestNewNeverStartsWithADash(t *testing.T) {
	for range 20_000 { // a 64th of them would, were it not prevented
		if id := New(); id[0] == '-' {
			t.Fatalf("New() = %q", id)
		}
	}
}
