package pdfedit

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/font"
)

// EmbeddedFont is the PostScript name of the font our own text is set in
// when it must be embedded (DESIGN §8: PDF/A 6.2.11.4.1, PDF/UA 7.21.4.1):
// watermark text and visible signature boxes of a PDF/A or PDF/UA. pdfcpu
// embeds a subset of a user font with a ToUnicode map; its core fonts
// (Helvetica) are never embedded.
const EmbeddedFont = "LiberationSans"

// embeddedFontFiles are where Debian's fonts-liberation2 (which
// scripts/setup installs for Chromium anyway) puts Liberation Sans, metric
// compatible with Helvetica and Arial, under the SIL Open Font License.
var embeddedFontFiles = []string{
	"/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
	"/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
}

var (
	fontOnce sync.Once
	fontErr  error
)

// UseEmbeddedFont makes EmbeddedFont known to pdfcpu, once per process.
// pdfcpu keeps user fonts in a process-wide directory (font.UserFontDir)
// of its own files, so the worker gives it a private temporary one instead
// of the user's config directory.
func UseEmbeddedFont() error {
	fontOnce.Do(func() { fontErr = installEmbeddedFont() })
	return fontErr
}

func installEmbeddedFont() error {
	var ttf []byte
	var err error
	for _, path := range embeddedFontFiles {
		if ttf, err = os.ReadFile(path); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("pdfedit: Liberation Sans not found (install fonts-liberation2; scripts/setup does): %w", err)
	}
	if font.UserFontDir == "" {
		dir, err := os.MkdirTemp("", "docrender-pdffonts-")
		if err != nil {
			return fmt.Errorf("pdfedit: font directory: %w", err)
		}
		font.UserFontDir = dir
	}
	if err := font.InstallFontFromBytesQuiet(font.UserFontDir, EmbeddedFont, ttf); err != nil {
		return fmt.Errorf("pdfedit: install %s: %w", EmbeddedFont, err)
	}
	if _, err := os.Stat(filepath.Join(font.UserFontDir, EmbeddedFont+".gob")); err != nil {
		return fmt.Errorf("pdfedit: %s installed under another name: %w", EmbeddedFont, err)
	}
	return font.ReloadUserFonts()
}
