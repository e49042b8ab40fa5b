package jobspb

// Written by hand beside the generated code.

// Worker kinds (DESIGN §1, §11): each job is taken by the workers of one
// kind, on subjects of its own, so operators scale each apart
// (DOCRENDER_WORKER_KINDS).
const (
	// KindChromium renders HTML: renders, batch documents, their slices,
	// screenshots, Markdown.
	KindChromium = "chromium"
	// KindPDF edits and reads PDFs: merge, the batch ZIP, inspect, the PDF tools.
	KindPDF = "pdf"
	// KindOffice converts office documents with LibreOffice.
	KindOffice = "office"
)

// WorkerKinds are every kind, in the order DOCRENDER_WORKER_KINDS lists
// them by default.
func WorkerKinds() []string { return []string{KindChromium, KindPDF, KindOffice} }

// WorkerKind is the kind of worker that takes j: renders, screenshots and
// Markdown (a render) on chromium, office documents (a batch's among them)
// on office, the PDF tools (a batch's PDFs among them) on pdf.
func (j *Job) WorkerKind() string {
	switch j.GetKind().(type) {
	case *Job_Merge, *Job_Zip, *Job_Inspect, *Job_Tool:
		return KindPDF
	case *Job_Office:
		return KindOffice
	case *Job_BatchDocument:
		switch d := j.GetBatchDocument(); {
		case d.GetOffice() != nil:
			return KindOffice
		case d.GetTool() != nil:
			return KindPDF
		}
	}
	return KindChromium
}

// Op names what j does within its kind ("render", "merge", ...): the last
// token of its subject, and its traces' and metrics' kind.
func (j *Job) Op() string {
	switch j.GetKind().(type) {
	case *Job_BatchDocument:
		return "batch-document"
	case *Job_Merge:
		return "merge"
	case *Job_Zip:
		return "zip"
	case *Job_Inspect:
		return "inspect"
	case *Job_Slice:
		return "slice"
	case *Job_Tool:
		return j.GetTool().Op()
	case *Job_Screenshot:
		return "screenshot"
	case *Job_Office:
		return "office"
	case *Job_Render:
		// Markdown is a render whose entry the worker converts first: an op
		// of its own, so its depth and traces read apart from HTML's.
		if j.GetRender().GetMarkdown() {
			return "markdown"
		}
	}
	return "render"
}

// Op names the tool ("split", "pages", "flatten", "optimize", "metadata",
// "text", "images"): the route's last path element and its job's subject
// token, so each tool's depth and traces read apart.
func (t *ToolJob) Op() string {
	switch t.GetTool().(type) {
	case *ToolJob_Split:
		return "split"
	case *ToolJob_Pages:
		return "pages"
	case *ToolJob_Flatten:
		return "flatten"
	case *ToolJob_Optimize:
		return "optimize"
	case *ToolJob_Metadata:
		return "metadata"
	case *ToolJob_Text:
		return "text"
	case *ToolJob_Images:
		return "images"
	}
	return "tool"
}

// Conversions is how many conversions j counts against its account's plan
// (DESIGN §11: one per input file): an office job's files, else one.
func (j *Job) Conversions() int {
	if o := j.GetOffice(); o != nil {
		return max(len(o.GetInputKeys()), 1)
	}
	return 1
}
