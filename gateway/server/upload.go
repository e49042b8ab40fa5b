package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/pdfopts"
)

// upload is a multipart request whose files were streamed into the blob store.
type upload struct {
	prefix  string
	files   []uploadedFile
	options string
	// url is the "url" field, when sent (hasURL).
	url    string
	hasURL bool
	// otherParts names file parts sent under another key than "files".
	otherParts []string
	// record holds DESIGN §8's parts (attachments, factur-x.xml).
	record *recordParts
	// text holds the route's own fields (readUploadFields).
	text map[string]string
}

type uploadedFile struct {
	Name     string `json:"name"`
	MimeType string `json:"mimetype"`
	Size     int64  `json:"-"`
	// SHA256 of the bytes: part of a caching ID's input hash (DESIGN §4.1).
	SHA256 []byte `json:"-"`
}

const maxFiles = 1000

// readUpload streams the parts of a multipart request: every "files" part
// into the blob store under prefix, the "options" field into memory. Files
// never sit whole in the gateway's memory.
func readUpload(c echo.Context, blobs blob.Store, prefix string, record *recordParts) (*upload, error) {
	return readUploadFields(c, blobs, prefix, record, nil)
}

// readUploadFields is readUpload that also keeps the route's own small
// fields (want) in the upload's text.
func readUploadFields(c echo.Context, blobs blob.Store, prefix string, record *recordParts, want textFields) (*upload, error) {
	if !isMultipart(c) {
		return nil, apierr.Bad("Expected multipart/form-data with the HTML under the key \"files\".").
			WithHint("Send the request as multipart/form-data, e.g. curl -F files=@index.html.")
	}
	u := &upload{prefix: prefix, record: record}
	seen := map[string]bool{}
	form, err := readFormFields(c, func(ctx context.Context, raw, mimeType string, body io.Reader) error {
		name, err := cleanName(raw)
		if err != nil {
			return err
		}
		if seen[name] {
			return apierr.Invalid("files", fmt.Sprintf("duplicate file name %q among the uploads", name))
		}
		if len(u.files) >= maxFiles {
			return apierr.Invalid("files", fmt.Sprintf("too many files: at most %d", maxFiles))
		}
		seen[name] = true
		body, err = boundImage(name, body)
		if err != nil {
			return err
		}
		cr := &countingReader{r: body, sum: sha256.New()}
		if err := blobs.Put(ctx, prefix+name, cr, -1); err != nil {
			if cr.err != nil {
				return bodyError(cr.err)
			}
			return fmt.Errorf("store upload: %w", err)
		}
		u.files = append(u.files, uploadedFile{Name: name, MimeType: mimeType, Size: cr.n, SHA256: cr.sum.Sum(nil)})
		return nil
	}, record, want)
	if form != nil {
		u.options, u.otherParts, u.text = form.options, form.otherParts, form.text
		u.url, u.hasURL = form.url, form.hasURL
	}
	return u, err
}

// bodyError turns a failure to read the request body into its answer: a
// body over the limit stays recognisable for the 413, one that stopped
// arriving keeps its 408 (edge.go), anything else the client sent is a
// malformed body.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	var ae *apierr.Error
	var bad *invalid.Error
	if errors.As(err, &mbe) || errors.Is(err, context.Canceled) || errors.As(err, &ae) || errors.As(err, &bad) {
		return err
	}
	return apierr.Bad("Malformed multipart body: %v", err)
}

// cleanName turns an uploaded file name into a safe relative path.
func cleanName(n string) (string, error) {
	n = strings.ReplaceAll(n, "\\", "/")
	if n == "" {
		return "", apierr.Bad("A file under \"files\" has no file name.")
	}
	if err := utf8Name(n); err != nil {
		return "", err
	}
	c := path.Clean("/" + n)[1:]
	if c == "" || c != strings.TrimPrefix(n, "./") || strings.HasPrefix(n, "/") || len(c) > 255 ||
		strings.ContainsAny(c, "\x00\r\n") {
		return "", apierr.Bad("File name %q is not a plain relative path.", n)
	}
	return c, nil
}

// utf8Name refuses an uploaded file name that is not UTF-8. Such a name
// cannot travel in a job (protobuf strings are UTF-8: the publish failed,
// a 500) nor be a bundle path the HTML could name; a generate bundle's
// names are its links, so no replacement would be right either.
func utf8Name(n string) error {
	if !utf8.ValidString(n) {
		return apierr.Invalid("files", fmt.Sprintf("the file name %q is not UTF-8", n)).
			WithHint("Send file names in UTF-8.")
	}
	return nil
}

// countingReader counts and hashes the bytes of an upload (hashing while
// streaming spares reading the file back for a cache key) and keeps the
// client-side read error apart from the store's own.
type countingReader struct {
	r   io.Reader
	n   int64
	sum hash.Hash
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.sum != nil {
		c.sum.Write(p[:n])
	}
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// entryFile picks the HTML to render (DESIGN §4.13): index.html, else the first .html file.
func (u *upload) entryFile() string {
	for _, f := range u.files {
		if f.Name == "index.html" {
			return f.Name
		}
	}
	for _, f := range u.files {
		ext := strings.ToLower(path.Ext(f.Name))
		if (ext == ".html" || ext == ".htm") && !pdfopts.IsMarginFile(f.Name) {
			return f.Name
		}
	}
	return ""
}

// has reports whether a file of that name was uploaded.
func (u *upload) has(name string) bool {
	for _, f := range u.files {
		if f.Name == name {
			return true
		}
	}
	return false
}

func (u *upload) names() []string {
	out := make([]string, len(u.files))
	for i, f := range u.files {
		out[i] = f.Name
	}
	return out
}

// rawFileName is the part's file name as sent. multipart.Part.FileName
// keeps only the base name, but a bundle's relative paths (css/site.css)
// are how its HTML finds its assets.
func rawFileName(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return p.FileName()
	}
	return params["filename"]
}
