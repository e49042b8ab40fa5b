package account

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// The hash a login without an account is checked against costs what a
// real one does, at whatever cost the service hashes with.
func TestDummyHashCost(t *testing.T) {
	for _, cost := range []int{bcrypt.MinCost, bcrypt.DefaultCost} {
		s := &Service{bcryptCost: cost}
		got, err := bcrypt.Cost(s.dummy())
		if err != nil || got != cost {
			t.Errorf("dummy hash cost %d (%v), want %d", got, err, cost)
		}
	}
}
