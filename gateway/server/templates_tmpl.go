package server

import "github.com/docrender/docrender/pkg/tmpl"

// The upload's checks through pkg/tmpl (DESIGN §9's Handlebars).

type (
	templateSyntaxError = tmpl.SyntaxError
	templateDataError   = tmpl.DataError
)

// maxTemplateFileBytes bounds an HTML file read for its check: past it
// tmpl.Parse refuses the file (line 1), without reading it all.
const maxTemplateFileBytes = tmpl.MaxTemplateBytes + 1

// parseTemplate parses src as a template and returns its <html lang>.
func parseTemplate(src []byte) (string, error) {
	t, err := tmpl.Parse(string(src))
	if err != nil {
		return "", err
	}
	return t.Lang, nil
}

// decodeTemplateData checks b as the data of a render.
func decodeTemplateData(b []byte) error {
	_, err := tmpl.DecodeData(b)
	return err
}
