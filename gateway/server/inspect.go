package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/proto/jobspb"
)

// inspect is POST /pdf/inspect (DESIGN §8): one PDF under the form key
// "files"; a worker reads it and says what it is and claims. It counts no
// conversion. The PDF is read as merge reads its inputs.
func (s *Server) inspect(c echo.Context) error {
	return s.withOnePDF(false, func(c echo.Context, _ *account.User, job *jobspb.Job, up *mergeUpload) error {
		job.Kind = &jobspb.Job_Inspect{Inspect: &jobspb.InspectJob{InputKey: up.keys[0], InputName: up.names[0]}}
		res, err := s.runJob(c.Request().Context(), job)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{"success": true, "data": inspectBody(res.GetInspect())})
	})(c)
}

// inspectBody is the answer's data (DESIGN §8): a claim that is absent is
// null.
func inspectBody(r *jobspb.InspectReport) map[string]any {
	sizes := make([]map[string]float64, 0, len(r.GetPageSizes()))
	for _, p := range r.GetPageSizes() {
		sizes = append(sizes, map[string]float64{"width": p.Width, "height": p.Height})
	}
	fonts := make([]map[string]any, 0, len(r.GetFonts()))
	for _, f := range r.GetFonts() {
		fonts = append(fonts, map[string]any{"name": f.Name, "embedded": f.Embedded})
	}
	files := make([]map[string]any, 0, len(r.GetAttachments()))
	for _, a := range r.GetAttachments() {
		files = append(files, map[string]any{"fileName": a.FileName, "size": a.Size, "mimeType": a.MimeType, "relationship": a.Relationship})
	}
	sigs := make([]map[string]any, 0, len(r.GetSignatures()))
	for _, g := range r.GetSignatures() {
		sigs = append(sigs, map[string]any{"signer": g.Signer, "signedAt": nullIfEmpty(g.SignedAt), "level": nullIfEmpty(g.Level),
			"coversWholeDocument": g.CoversWholeDocument, "valid": g.Valid, "reason": g.Reason})
	}
	var pdfa, pdfua any
	if r.GetPdfaPart() != "" {
		pdfa = map[string]string{"part": r.PdfaPart, "conformance": r.PdfaConformance}
	}
	if r.GetPdfuaPart() != "" {
		pdfua = map[string]string{"part": r.PdfuaPart}
	}
	metadata := r.GetMetadata()
	if metadata == nil {
		metadata = map[string]string{}
	}
	return map[string]any{
		"pages": r.GetPages(), "pageSizes": sizes, "pdfVersion": r.GetPdfVersion(), "tagged": r.GetTagged(),
		"encrypted": r.GetEncrypted(), "pdfa": pdfa, "pdfua": pdfua, "lang": r.GetLang(), "metadata": metadata,
		"fonts": fonts, "attachments": files, "signatures": sigs,
	}
}

// nullIfEmpty is s, or JSON null for "".
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
