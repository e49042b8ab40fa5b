package server

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// maxOptionsBytes bounds the "options" field of a multipart request.
const maxOptionsBytes = 1 << 20

// maxURLBytes bounds the "url" field.
const maxURLBytes = 8 << 10

// form is what every multipart route reads besides its files.
type form struct {
	// options is the "options" field: JSON, read by the route.
	options string
	// url is the "url" field: a page to render instead of files (generate).
	url    string
	hasURL bool
	// otherParts names file parts sent under another key than "files",
	// for the hint of a request without files.
	otherParts []string
	// want names the route's own small fields (the template upload's name
	// and sampleData) with the bound of each in bytes; text holds them.
	want textFields
	text map[string]string
}

// textFields are a route's own small fields, each with its bound in bytes.
// They are read as text whether sent as a field or as a file part (curl -F
// sampleData=@data.json).
type textFields map[string]int

// fileFunc takes one "files" part: its name as sent (rawFileName), its
// content type ("application/octet-stream" when none) and its bytes, which
// it must not keep past its return.
type fileFunc func(ctx context.Context, name, mimeType string, body io.Reader) error

// readForm is the one multipart reader of generate and merge. It streams
// each "files" part to file, in order, never holding a whole file in
// memory; keeps "options" (at most maxOptionsBytes); gives DESIGN §8's
// parts to record (nil: a route without them); names file parts under
// other keys; drains the rest. A failure of the body itself becomes its
// answer (bodyError).
func readForm(c echo.Context, file fileFunc, record *recordParts) (*form, error) {
	return readFormFields(c, file, record, nil)
}

// readFormFields is readForm that also keeps the fields of want.
func readFormFields(c echo.Context, file fileFunc, record *recordParts, want textFields) (*form, error) {
	mr, err := c.Request().MultipartReader()
	if err != nil {
		return nil, apierr.Bad("Malformed multipart body: %v", err)
	}
	ctx := c.Request().Context()
	f := &form{want: want}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return f, bodyError(err)
		}
		var took bool
		took, err = record.take(ctx, part.FormName(), rawFileName(part), part.Header.Get("Content-Type"), part)
		if !took && err == nil {
			err = f.readPart(ctx, part.FormName(), rawFileName(part), part.Header.Get("Content-Type"), part, file)
		}
		part.Close()
		if err != nil {
			return f, err
		}
	}
}

func (f *form) readPart(ctx context.Context, field, name, mimeType string, r io.Reader, file fileFunc) error {
	switch field {
	case "files":
		if mimeType == "" {
			mimeType = "application/octet-stream"
		}
		return file(ctx, name, mimeType, r)
	case "options":
		b, err := io.ReadAll(io.LimitReader(r, maxOptionsBytes+1))
		if err != nil {
			return bodyError(err)
		}
		if len(b) > maxOptionsBytes {
			return apierr.Invalid("options", "larger than 1 MiB")
		}
		f.options = string(b)
	case "url":
		b, err := io.ReadAll(io.LimitReader(r, maxURLBytes+1))
		if err != nil {
			return bodyError(err)
		}
		if len(b) > maxURLBytes {
			return apierr.Invalid("url", fmt.Sprintf("at most %d bytes", maxURLBytes))
		}
		f.url, f.hasURL = string(b), true
	default:
		if limit, ok := f.want[field]; ok {
			b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
			if err != nil {
				return bodyError(err)
			}
			if len(b) > limit {
				return apierr.Invalid(field, fmt.Sprintf("larger than %d bytes", limit))
			}
			if f.text == nil {
				f.text = map[string]string{}
			}
			f.text[field] = string(b)
			return nil
		}
		if name != "" {
			f.otherParts = append(f.otherParts, field)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return bodyError(err)
		}
	}
	return nil
}
