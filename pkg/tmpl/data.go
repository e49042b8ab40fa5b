package tmpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Bounds of a document's data.
const (
	MaxDataBytes = 5 << 20 // the JSON
	MaxDataDepth = 100     // objects and lists inside each other, the top object included
)

// DataError is data refused by DecodeData (a 400).
type DataError struct {
	Path    string // where, like "items[3].price"; "" for the whole
	Problem string
}

func (e *DataError) Error() string {
	if e.Path == "" {
		return "data: " + e.Problem
	}
	return "data " + e.Path + ": " + e.Problem
}

// DecodeData parses a JSON object of data: at most MaxDataBytes, nesting at
// most MaxDataDepth deep, numbers kept exact as json.Number. Errors are
// *DataError.
func DecodeData(b []byte) (map[string]any, error) {
	if len(b) > MaxDataBytes {
		return nil, &DataError{Problem: fmt.Sprintf("the data is larger than %d bytes", MaxDataBytes)}
	}
	d := &dataDecoder{dec: json.NewDecoder(bytes.NewReader(b))}
	d.dec.UseNumber()
	t, err := d.dec.Token()
	if err != nil {
		return nil, d.syntax("", err)
	}
	if t != json.Delim('{') {
		return nil, &DataError{Problem: "the data must be a JSON object"}
	}
	v, err := d.object("", 1)
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, &DataError{Problem: "there is more after the data's JSON object"}
	}
	return v, nil
}

type dataDecoder struct{ dec *json.Decoder }

func (d *dataDecoder) syntax(path string, err error) error {
	if errors.Is(err, io.EOF) {
		return &DataError{Path: path, Problem: "the JSON ends too soon"}
	}
	return &DataError{Path: path, Problem: fmt.Sprintf("invalid JSON at byte %d: %v", d.dec.InputOffset(), err)}
}

func (d *dataDecoder) value(t json.Token, path string, depth int) (any, error) {
	switch x := t.(type) {
	case json.Delim:
		if depth+1 > MaxDataDepth {
			return nil, &DataError{Path: path, Problem: fmt.Sprintf("nested more than %d levels deep", MaxDataDepth)}
		}
		if x == '{' {
			return d.object(path, depth+1)
		}
		return d.list(path, depth+1)
	}
	return t, nil // string, json.Number, bool, nil
}

func (d *dataDecoder) object(path string, depth int) (map[string]any, error) {
	m := map[string]any{}
	for d.dec.More() {
		t, err := d.dec.Token()
		if err != nil {
			return nil, d.syntax(path, err)
		}
		k, _ := t.(string)
		p := joinKey(path, k)
		t, err = d.dec.Token()
		if err != nil {
			return nil, d.syntax(p, err)
		}
		v, err := d.value(t, p, depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	if _, err := d.dec.Token(); err != nil { // '}'
		return nil, d.syntax(path, err)
	}
	return m, nil
}

func (d *dataDecoder) list(path string, depth int) ([]any, error) {
	l := []any{}
	for d.dec.More() {
		p := path + "[" + strconv.Itoa(len(l)) + "]"
		t, err := d.dec.Token()
		if err != nil {
			return nil, d.syntax(p, err)
		}
		v, err := d.value(t, p, depth)
		if err != nil {
			return nil, err
		}
		l = append(l, v)
	}
	if _, err := d.dec.Token(); err != nil { // ']'
		return nil, d.syntax(path, err)
	}
	return l, nil
}

// joinKey appends an object key to a path: .name, or ["odd key"].
func joinKey(path, k string) string {
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127) {
			plain = false
			break
		}
	}
	if !plain {
		return path + "[" + strconv.Quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}
