package jobspb

import "testing"

// A batch document is taken by the kind that converts it: its office file
// by the office kind, its PDF by the pdf kind, its page by chromium.
func TestWorkerKindOfBatchDocument(t *testing.T) {
	page := &Job{Kind: &Job_BatchDocument{BatchDocument: &BatchDocumentJob{Render: &RenderJob{}}}}
	office := &Job{Kind: &Job_BatchDocument{BatchDocument: &BatchDocumentJob{Office: &OfficeJob{InputKeys: []string{"k"}}}}}
	if k := page.WorkerKind(); k != KindChromium {
		t.Errorf("a page's batch document goes to %s", k)
	}
	if k := office.WorkerKind(); k != KindOffice {
		t.Errorf("an office batch document goes to %s", k)
	}
	pdf := &Job{Kind: &Job_BatchDocument{BatchDocument: &BatchDocumentJob{Tool: &ToolJob{InputKey: "k"}}}}
	if k := pdf.WorkerKind(); k != KindPDF {
		t.Errorf("a PDF batch document goes to %s", k)
	}
	if page.Op() != "batch-document" || office.Op() != "batch-document" || office.Conversions() != 1 {
		t.Errorf("ops %s, %s; conversions %d", page.Op(), office.Op(), office.Conversions())
	}
}
