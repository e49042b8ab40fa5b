package pdfedit

import _ "embed"

// SRGBProfile is the ICC profile of the sRGB output intent that PDF/A
// needs (DESIGN §8; ISO 19005-2 6.2.3: a monitor or printer profile, RGB,
// ICC version below 5).
//
// Provenance: /usr/share/color/icc/sRGB.icc of Debian bookworm's
// icc-profiles-free 2.0.1+dfsg-1.1 (apt-get download icc-profiles-free),
// 6922 bytes, sha256
// 2a92d4bae450b76d8b0aa42193df974d75f62738ecebf74f01c5e75b12a95796
// (docs/plans/issue-22.md §0.4). ICC 2.3, class mntr, colour space RGB,
// description "sRGB", copyright "no copyright, use freely"; Zlib licence
// (Kai-Uwe Behrmann, Marti Maria and others) per the package's
// /usr/share/doc/icc-profiles-free/copyright.
//
//go:embed srgb.icc
var SRGBProfile []byte

// SRGBProfileSHA256 is SRGBProfile's sha256, hex.
const SRGBProfileSHA256 = "2a92d4bae450b76d8b0aa42193df974d75f62738ecebf74f01c5e75b12a95796"
