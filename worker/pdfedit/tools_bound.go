package pdfedit

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/pdfcpu/pdfcpu/pkg/filter"
)

const (
	// minDecodeBudget is what every tool input may decode to, all its
	// streams together, whatever its size; also pdfcpu's bound on one
	// stream (toolConf). pdfcpu bounds each stream alone (512 MiB by
	// default), so a file of many small flate bombs could still make it
	// hold gigabytes.
	minDecodeBudget = 256 << 20
	// decodeRatio lets a large input decode to more: text content
	// deflates 3-10×, a bomb 1000×.
	decodeRatio = 20
	// dictWindow bounds how far back from "stream" a stream's dictionary
	// is looked for.
	dictWindow = 64 << 10
)

// checkInflation decodes every stream of data that declares decodable
// filters (Flate, LZW, ASCIIHex, ASCII85, RunLength; image codecs end the
// chain), streaming what flate gives into nothing, and refuses the input
// when the streams together decode past max(minDecodeBudget,
// decodeRatio × len(data)): before pdfcpu, which keeps what it decodes,
// is given the file. Streams are found by their keyword after a
// dictionary, as a reader recovering a broken file does; what cannot be
// decoded (encrypted, corrupt) counts for what it gave.
func checkInflation(ctx context.Context, data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &BadInputError{Reason: fmt.Sprintf("corrupt or unreadable PDF (%v)", r)}
		}
	}()
	budget := max(int64(minDecodeBudget), decodeRatio*int64(len(data)))
	var used int64
	var zr io.ReadCloser // reused: a flate reader's window is 32 KiB
	for at := 0; ; {
		i := bytes.Index(data[at:], []byte("stream"))
		if i < 0 {
			return nil
		}
		kw := at + i
		at = kw + len("stream")
		start, ok := streamStart(data, at)
		if !ok {
			continue
		}
		dictEnd := lastNonSpace(data, kw)
		if dictEnd < 2 || !bytes.Equal(data[dictEnd-2:dictEnd], []byte(">>")) {
			continue
		}
		names, ok := streamFilters(data, dictEnd)
		if !ok || len(names) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n, z := decodedSize(data[start:], names, budget-used, zr)
		zr = z
		if used += n; used > budget {
			return &BadInputError{Reason: fmt.Sprintf("its streams decompress to over %d MiB (a decompression bomb?)", budget>>20)}
		}
	}
}

// streamStart is where a stream's data begins after its keyword, which
// ends at data[at]: after CRLF or LF (or a lone CR, which readers
// forgive). ok is false for the word "stream" anywhere else.
func streamStart(data []byte, at int) (int, bool) {
	switch {
	case bytes.HasPrefix(data[at:], []byte("\r\n")):
		return at + 2, true
	case at < len(data) && (data[at] == '\n' || data[at] == '\r'):
		return at + 1, true
	}
	return 0, false
}

// lastNonSpace is the index just past the last non-blank byte before i.
func lastNonSpace(data []byte, i int) int {
	for i > 0 && isSpace(data[i-1]) {
		i--
	}
	return i
}

// streamFilters reads the /Filter names of the dictionary that ends just
// before data[end] (">>"), looked for within dictWindow bytes. ok is false
// when the dictionary is not found or its filter is not a name or an
// array of names (an indirect one is not followed).
func streamFilters(data []byte, end int) ([]string, bool) {
	lo := max(0, end-dictWindow)
	depth := 0
	for j := end - 1; j >= lo+1; j-- {
		switch {
		case data[j] == '>' && data[j-1] == '>':
			depth++
			j--
		case data[j] == '<' && data[j-1] == '<':
			depth--
			j--
			if depth == 0 {
				return filterNames(dictEntry(data[j:end], "/Filter"))
			}
		}
	}
	return nil, false
}

// filterNames reads a /Filter value's tokens: a name or an array of names.
func filterNames(v []string) ([]string, bool) {
	switch {
	case len(v) == 1 && len(v[0]) > 1 && v[0][0] == '/':
		return []string{v[0][1:]}, true
	case len(v) >= 2 && v[0] == "[" && v[len(v)-1] == "]":
		var names []string
		for _, t := range v[1 : len(v)-1] {
			if len(t) < 2 || t[0] != '/' {
				return nil, false
			}
			names = append(names, t[1:])
		}
		return names, true
	}
	return nil, false
}

// decodedSize is how many bytes the stream starting at data decodes to
// through names, counted up to limit+1. Flate streams through zr (reset,
// or made when nil, and returned for the next stream); the other filters
// decode whole, through pdfcpu's with limit as their bound, on the bytes
// up to "endstream".
func decodedSize(data []byte, names []string, limit int64, zr io.ReadCloser) (int64, io.ReadCloser) {
	if limit < 1 {
		return 1, zr
	}
	var r io.Reader = bytes.NewReader(data)
	whole := false
	for i, name := range names {
		switch name {
		case "FlateDecode", "Fl":
			if i == 0 && zr != nil {
				if zr.(zlib.Resetter).Reset(r, nil) != nil {
					return 0, zr
				}
				r = zr
				continue
			}
			z, err := zlib.NewReader(r)
			if err != nil {
				return 0, zr
			}
			if i == 0 {
				zr = z
			}
			r = z
		case "LZWDecode", "LZW", "ASCIIHexDecode", "AHx", "ASCII85Decode", "A85", "RunLengthDecode", "RL":
			if !whole && i == 0 {
				if e := bytes.Index(data, []byte("endstream")); e >= 0 {
					r = bytes.NewReader(data[:e])
				}
				whole = true
			}
			f, err := filter.NewFilter(longFilterName(name), nil, limit)
			if err != nil {
				return 0, zr
			}
			if r, err = f.Decode(r); errors.Is(err, filter.ErrDecodeLimitExceeded) {
				return limit + 1, zr
			} else if err != nil {
				return 0, zr
			}
		default: // image codecs, Crypt: decoded by nobody here
			return 0, zr
		}
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(r, limit+1))
	return n, zr
}

// longFilterName is the filter's name as pdfcpu knows it (inline images'
// abbreviations are also seen in stream dictionaries).
func longFilterName(name string) string {
	switch name {
	case "LZW":
		return filter.LZW
	case "AHx":
		return filter.ASCIIHex
	case "A85":
		return filter.ASCII85
	case "RL":
		return filter.RunLength
	}
	return name
}
