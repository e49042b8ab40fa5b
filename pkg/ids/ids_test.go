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
