package pdfedit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrender/docrender/proto/jobspb"
)

// ErrInvalidEncryption wraps every error about the encryption options
// themselves: like ErrInvalidWatermark it is the client's fault, and since
// the gateway validates them (pdfopts.ParseEncryption), a worker seeing it
// means the two disagree.
var ErrInvalidEncryption = errors.New("invalid encryption")

// MaxPasswordBytes bounds either password: the AES-256 security handler
// uses only the first 127 bytes of a password's UTF-8, so a longer one
// would lock out a reader that types it in full.
const MaxPasswordBytes = 127

// Encrypt writes in to w encrypted with AES-256 (ISO 32000-2's standard
// security handler, revision 6): enc's owner password unlocks everything,
// its user password (which may be empty: the PDF then opens without one)
// opens the document under the permissions AllowPrinting, AllowCopying and
// AllowModifying. When enc is nil, in is copied to w unchanged.
//
// Encrypt is the last edit of a document: nothing in pdfedit reads an
// encrypted PDF. The output declares PDF 2.0, the version that defines
// revision 6 (pdfcpu writes the deprecated revision 5, whose password check
// is a single SHA-256 and so cheap to attack, for any older version).
//
// Bad options give an error wrapping ErrInvalidEncryption; a PDF pdfcpu
// cannot read or write a *BadInputError (with an empty Name); cancelling ctx
// returns ctx's error.
func Encrypt(ctx context.Context, in io.ReadSeeker, w io.Writer, enc *jobspb.Encryption) error {
	if w == nil {
		return errors.New("pdfedit: encrypt: nil writer")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if enc == nil {
		return copyInput(ctx, in, w)
	}
	if err := checkEncryption(enc); err != nil {
		return err
	}
	conf := newConf(model.ENCRYPT)
	conf.UserPW, conf.OwnerPW = enc.GetUserPassword(), enc.GetOwnerPassword()
	conf.EncryptUsingAES, conf.EncryptKeyLength = true, 256
	conf.Permissions = permissions(enc)
	return rewrite(ctx, in, w, conf, func(pc *model.Context) error {
		// pdfcpu picks revision 6 for a PDF 2.0 document only.
		v := model.V20
		pc.RootVersion = &v
		return nil
	})
}

// checkEncryption validates enc as the gateway does: a reader must be able
// to type each password, and the user password must not grant the owner's
// rights.
func checkEncryption(enc *jobspb.Encryption) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidEncryption, fmt.Sprintf(format, args...))
	}
	owner, user := enc.GetOwnerPassword(), enc.GetUserPassword()
	switch {
	case owner == "":
		return bad("the owner password is required")
	case len(owner) > MaxPasswordBytes || len(user) > MaxPasswordBytes:
		return bad("a password is over %d bytes", MaxPasswordBytes)
	case !utf8.ValidString(owner) || !utf8.ValidString(user):
		return bad("a password is not UTF-8")
	case user == owner:
		// A reader tries the owner password first: the permissions would
		// never apply.
		return bad("the user password equals the owner password")
	}
	return nil
}

// permissions maps enc's switches to the /P flags (ISO 32000-2 table 22).
func permissions(enc *jobspb.Encryption) model.PermissionFlags {
	// pdfcpu's PermissionsNone holds the reserved bits that must be 1 (7-8
	// and 13-16; pdfcpu writes /P as an int16, whose sign extends them to
	// bit 32), and also bits 1-2, which must be 0.
	p := model.PermissionsNone &^ (model.UnusedFlag1 | model.UnusedFlag2)
	// Bit 10, extraction for accessibility: PDF 2.0 deprecates it and asks
	// writers to set it, so screen readers keep reading a copy-protected
	// (tagged) document.
	p |= model.PermissionExtractRev3
	if enc.GetAllowPrinting() {
		p |= model.PermissionPrintRev2 | model.PermissionPrintRev3
	}
	if enc.GetAllowCopying() {
		p |= model.PermissionExtract
	}
	if enc.GetAllowModifying() {
		p |= model.PermissionModify | model.PermissionModAnnFillForm | model.PermissionFillRev3 | model.PermissionAssembleRev3
	}
	return p
}
