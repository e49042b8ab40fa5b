package pdfedit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

func TestSRGBProfile(t *testing.T) {
	sum := sha256.Sum256(SRGBProfile)
	if got := hex.EncodeToString(sum[:]); got != SRGBProfileSHA256 {
		t.Fatalf("srgb.icc sha256 %s, want %s", got, SRGBProfileSHA256)
	}
	if p := SRGBProfile; len(p) < 128 || string(p[12:16]) != "mntr" || string(p[16:20]) != "RGB " || p[8] >= 5 {
		t.Fatalf("srgb.icc is not an ICC v2–4 RGB monitor profile")
	}
	sys, err := os.ReadFile("/usr/share/color/icc/sRGB.icc")
	if err != nil {
		t.Skip("icc-profiles-free is not installed:", err)
	}
	if !bytes.Equal(sys, SRGBProfile) {
		t.Fatal("srgb.icc differs from icc-profiles-free's /usr/share/color/icc/sRGB.icc")
	}
}
