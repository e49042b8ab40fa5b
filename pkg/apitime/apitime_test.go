package apitime

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 24, 9, 5, 3, 0, time.UTC), "2026-11-24T09:05:03.000Z"},
		{time.Date(2026, 11, 24, 9, 5, 3, 123456789, time.UTC), "2026-11-24T09:05:03.123Z"},
		// Another zone is written as the same instant in UTC.
		{time.Date(2026, 11, 24, 10, 5, 3, 0, time.FixedZone("CET", 3600)), "2026-11-24T09:05:03.000Z"},
	}
	for _, tc := range tests {
		got := Format(tc.in)
		if got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.in, got, tc.want)
		}
		// What we write, RFC 3339 readers read back to the millisecond.
		back, err := time.Parse(time.RFC3339, got)
		if err != nil || !back.Equal(tc.in.Truncate(time.Millisecond)) {
			t.Errorf("time.Parse(RFC3339, %q) = %v, %v", got, back, err)
		}
	}
}
