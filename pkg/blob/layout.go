package blob

import "strconv"

// The layout of the blob store: every key the service writes is made here,
// so where a thing lives, and which prefix a sweeper or a bucket lifecycle
// rule may empty, is decided in one place.
const (
	// JobsPrefix holds each single request's temporary files: its inputs,
	// and its result until it is answered. A request deletes its own; a
	// sweeper deletes those of requests whose gateway died.
	JobsPrefix = "jobs/"
	// FilesPrefix holds stored files (hosted PDFs and ZIPs, cached
	// documents, batch ZIPs), one object per file ID, deleted at expiry.
	FilesPrefix = "files/"
	// BatchesPrefix holds each batch's inputs and rendered documents until
	// its ZIP is built or it fails.
	BatchesPrefix = "batches/"
)

// JobDir is the prefix of everything a single request stores.
func JobDir(jobID string) string { return JobsPrefix + jobID + "/" }

// JobInputs is where a request's uploaded files are stored, each as
// JobInputs(id) + its name.
func JobInputs(jobID string) string { return JobDir(jobID) + "in/" }

// JobResult is where a job writes the PDF its request answers with.
func JobResult(jobID string) string { return JobDir(jobID) + "out.pdf" }

// JobWatermark is where a request's watermark image is stored for its job
// (OffloadWatermark). It sits beside JobInputs, not in it: an uploaded
// file may have any name, watermark.png included.
func JobWatermark(jobID string) string { return JobDir(jobID) + "watermark.png" }

// JobSlices is where a job printed in slices keeps each slice's HTML and
// PDF while the slots of other workers print them (DESIGN §10).
func JobSlices(jobID string) string { return JobDir(jobID) + "slices/" }

// FileKey is where a stored file's bytes live.
func FileKey(fileID string) string { return FilesPrefix + fileID }

// BatchDir is the prefix of a batch's temporary files.
func BatchDir(batchID string) string { return BatchesPrefix + batchID + "/" }

// BatchInputs is the bundle prefix of document i of a batch.
func BatchInputs(batchID string, i int) string {
	return BatchDir(batchID) + "in/" + strconv.Itoa(i) + "/"
}

// BatchPDF is where document i of a batch is rendered to.
func BatchPDF(batchID string, i int) string {
	return BatchDir(batchID) + "pdf/" + strconv.Itoa(i) + ".pdf"
}

// BatchWatermark is where a batch's watermark image is stored, once for all
// of its documents (OffloadWatermark).
func BatchWatermark(batchID string) string { return BatchDir(batchID) + "watermark.png" }

// BatchReport is where document i of a batch keeps its render report for
// the batch's report.json (DESIGN §6), until the ZIP is built.
func BatchReport(batchID string, i int) string {
	return BatchDir(batchID) + "report/" + strconv.Itoa(i) + ".json"
}

// TemplatesPrefix holds stored templates (DESIGN §9): every version of
// every template, each under a prefix of its own that never changes once a
// record names it. They are kept until their template (or version) is
// deleted, and then some (gateway/templates): no lifecycle rule applies.
const TemplatesPrefix = "templates/"

// TemplateDir is the prefix of everything stored for one template.
func TemplateDir(id string) string { return TemplatesPrefix + id + "/" }

// TemplateVersion is the prefix of one version of a template: its files
// and its sample data.
func TemplateVersion(id string, version int) string {
	return TemplateDir(id) + "v" + strconv.Itoa(version) + "/"
}

// TemplateFiles is the prefix of a template version's files: file f (a
// relative path, as uploaded) is at TemplateFiles(id, version) + f.
func TemplateFiles(id string, version int) string { return TemplateVersion(id, version) + "files/" }

// TemplateSample is where a template version's sampleData (JSON) is
// stored, when it was uploaded with one. It sits beside TemplateFiles, not
// in it: an uploaded file may have any name.
func TemplateSample(id string, version int) string {
	return TemplateVersion(id, version) + "sample.json"
}
