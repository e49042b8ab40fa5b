package pdfedit

import (
	"slices"
	"testing"
)

func TestParsePages(t *testing.T) {
	tests := []struct {
		spec  string
		count int
		want  []int
	}{
		{"all", 3, []int{1, 2, 3}},
		{"", 3, []int{1, 2, 3}},
		{" All ", 2, []int{1, 2}},
		{"1", 3, []int{1}},
		{"1-3,5", 6, []int{1, 2, 3, 5}},
		{"1-3,5", 4, []int{1, 2, 3}},
		{"5,1-3", 6, []int{1, 2, 3, 5}},
		{"1 - 2 , 4", 5, []int{1, 2, 4}},
		{"2-2", 3, []int{2}},
		{"3-1", 5, []int{1, 2, 3}},
		{"1,1,1-2", 3, []int{1, 2}},
		{"3-10", 4, []int{3, 4}},
		{"7", 4, nil},
		{"5-9", 4, nil},
		{"0", 4, nil},
		{"0-2", 4, []int{1, 2}},
		{"99999999999999999999999", 4, nil},
		{"2-99999999999999999999999", 4, []int{2, 3, 4}},
		{"all", 0, []int{}},
		{"1", 0, nil},
	}
	for _, tt := range tests {
		got, err := ParsePages(tt.spec, tt.count)
		if err != nil {
			t.Errorf("ParsePages(%q, %d): %v", tt.spec, tt.count, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParsePages(%q, %d) = %v, want %v", tt.spec, tt.count, got, tt.want)
		}
	}
}

func TestParsePagesInvalid(t *testing.T) {
	for _, spec := range []string{"x", "1-", "-3", "1,,2", "1-2-3", "1;2", "first", "1.5", "+1", ",", "all,1", "1 2"} {
		if got, err := ParsePages(spec, 10); err == nil {
			t.Errorf("ParsePages(%q) = %v, want an error", spec, got)
		}
	}
}
