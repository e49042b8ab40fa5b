package jobspb

// Written by hand beside the generated code.

// BatchRef names the batch a job belongs to and the document's index in it
// (-1 for the batch's ZIP); "" for a job of no batch. Logs and results carry
// it whatever the job's kind.
func (j *Job) BatchRef() (id string, index int32) {
	switch k := j.GetKind().(type) {
	case *Job_BatchDocument:
		return k.BatchDocument.GetBatchId(), k.BatchDocument.GetIndex()
	case *Job_Zip:
		return k.Zip.GetBatchId(), -1
	}
	return "", 0
}
