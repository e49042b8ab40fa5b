package server

import (
	"encoding/json"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

// TestInspectBodySignatures: the answer's signatures, an unknown level or
// time as null, and an empty list (not null) when there are none.
func TestInspectBodySignatures(t *testing.T) {
	body, err := json.Marshal(inspectBody(&jobspb.InspectReport{Pages: 1, Signatures: []*jobspb.InspectReport_Signature{
		{Signer: "ACME Signer", SignedAt: "2026-11-27T14:50:09Z", Level: "B-T", CoversWholeDocument: true, Valid: true, Reason: "Approved"},
		{Signer: "", Reason: ""},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Signatures []map[string]any `json:"signatures"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Signatures) != 2 {
		t.Fatalf("%s", body)
	}
	want := map[string]any{"signer": "ACME Signer", "signedAt": "2026-11-27T14:50:09Z", "level": "B-T", "coversWholeDocument": true, "valid": true, "reason": "Approved"}
	for k, v := range want {
		if got.Signatures[0][k] != v {
			t.Errorf("%s = %v, want %v", k, got.Signatures[0][k], v)
		}
	}
	if s := got.Signatures[1]; s["level"] != nil || s["signedAt"] != nil || s["valid"] != false || len(s) != 6 {
		t.Errorf("an unreadable signature: %v", s)
	}
	empty, _ := json.Marshal(inspectBody(&jobspb.InspectReport{}))
	var none map[string]any
	if json.Unmarshal(empty, &none); none["signatures"] == nil {
		t.Errorf("no signatures: %s", empty)
	}
}
