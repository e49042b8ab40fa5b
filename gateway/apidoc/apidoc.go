// Package apidoc is the API's public description: the OpenAPI 3.1 document
// (openapi.json, written by hand because it is the contract, not generated
// from the code) and the HTML reference rendered from it for GET /docs.
// Tests in this package and in gateway/server hold the document to the
// routes and answers the gateway really has.
package apidoc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed openapi.json
var document []byte

// Raw is the document as written, with its placeholder server address.
func Raw() []byte { return bytes.Clone(document) }

// Docs are the document and its reference page for one base address.
type Docs struct {
	// JSON is the OpenAPI document with servers set to the base address.
	JSON []byte
	// HTML is the reference page.
	HTML []byte
}

// New builds the document and the reference page for a service answering
// at baseURL (DOCRENDER_BASE_URL): both name it as the server, so a client
// generated from the document, or a reader copying an example, reaches
// this service and not the placeholder.
func New(baseURL string) (*Docs, error) {
	doc, err := withServer(document, baseURL)
	if err != nil {
		return nil, err
	}
	page, err := render(doc)
	if err != nil {
		return nil, err
	}
	return &Docs{JSON: doc, HTML: page}, nil
}

// withServer returns doc with its top-level "servers" replaced by one
// server at baseURL. Only that value's bytes change: the rest keeps the
// order and layout it was written in.
func withServer(doc []byte, baseURL string) ([]byte, error) {
	servers, err := json.Marshal([]map[string]string{{"url": baseURL, "description": "This service"}})
	if err != nil {
		return nil, fmt.Errorf("apidoc: servers: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("apidoc: the document is not a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("apidoc: read document: %w", err)
		}
		// The value starts after the key (and the colon that Decode skips).
		start := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("apidoc: read document: %w", err)
		}
		if key != "servers" {
			continue
		}
		end := dec.InputOffset()
		out := make([]byte, 0, len(doc)+len(servers))
		out = append(out, doc[:start]...)
		out = append(out, ": "...)
		out = append(out, servers...)
		return append(out, doc[end:]...), nil
	}
	return nil, fmt.Errorf("apidoc: the document has no servers")
}
