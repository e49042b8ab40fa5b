package tmpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bounds of a document's data.
const (
	MaxDataBytes = 5 << 20 // the JSON
	MaxDataDepth = 100     // objects and lists inside each other, the top object included
	MaxKeyBytes  = 1 << 10 // an object's key
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
		return nil, d.syntax(err)
	}
	if t != json.Delim('{') {
		return nil, &DataError{Problem: "the data must be a JSON object"}
	}
	v, err := d.object(1)
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, &DataError{Problem: "there is more after the data's JSON object"}
	}
	return v, nil
}

// dataDecoder reads the data's JSON. The path of the value being read is a
// stack of segments, joined into a string only for an error: building it
// for every value would cost the length of a key for each of its list's
// elements.
type dataDecoder struct {
	dec  *json.Decoder
	path []pathSeg
}

type pathSeg struct {
	key  string // an object's key
	idx  int    // a list's index
	list bool
}

// where is the path being read, like "items[3].price".
func (d *dataDecoder) where() string {
	var b strings.Builder
	for _, s := range d.path {
		if s.list {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
			continue
		}
		writeKey(&b, s.key)
	}
	return b.String()
}

func (d *dataDecoder) syntax(err error) error {
	if errors.Is(err, io.EOF) {
		return &DataError{Path: d.where(), Problem: "the JSON ends too soon"}
	}
	return &DataError{Path: d.where(), Problem: fmt.Sprintf("invalid JSON at byte %d: %v", d.dec.InputOffset(), err)}
}

func (d *dataDecoder) value(t json.Token, depth int) (any, error) {
	switch x := t.(type) {
	case json.Delim:
		if depth+1 > MaxDataDepth {
			return nil, &DataError{Path: d.where(), Problem: fmt.Sprintf("nested more than %d levels deep", MaxDataDepth)}
		}
		if x == '{' {
			return d.object(depth + 1)
		}
		return d.list(depth + 1)
	}
	return t, nil // string, json.Number, bool, nil
}

func (d *dataDecoder) object(depth int) (map[string]any, error) {
	m := map[string]any{}
	for d.dec.More() {
		t, err := d.dec.Token()
		if err != nil {
			return nil, d.syntax(err)
		}
		k, _ := t.(string)
		if len(k) > MaxKeyBytes {
			return nil, &DataError{Path: d.where(), Problem: fmt.Sprintf("a key is longer than %d bytes (%s…)", MaxKeyBytes, strconv.Quote(k[:40]))}
		}
		d.path = append(d.path, pathSeg{key: k})
		t, err = d.dec.Token()
		if err != nil {
			return nil, d.syntax(err)
		}
		v, err := d.value(t, depth)
		if err != nil {
			return nil, err
		}
		d.path = d.path[:len(d.path)-1]
		m[k] = v
	}
	if _, err := d.dec.Token(); err != nil { // '}'
		return nil, d.syntax(err)
	}
	return m, nil
}

func (d *dataDecoder) list(depth int) ([]any, error) {
	l := []any{}
	d.path = append(d.path, pathSeg{list: true})
	for d.dec.More() {
		d.path[len(d.path)-1].idx = len(l)
		t, err := d.dec.Token()
		if err != nil {
			return nil, d.syntax(err)
		}
		v, err := d.value(t, depth)
		if err != nil {
			return nil, err
		}
		l = append(l, v)
	}
	d.path = d.path[:len(d.path)-1]
	if _, err := d.dec.Token(); err != nil { // ']'
		return nil, d.syntax(err)
	}
	return l, nil
}

// writeKey appends an object key to a path: .name, or ["odd key"].
func writeKey(b *strings.Builder, k string) {
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127) {
			plain = false
			break
		}
	}
	if !plain {
		b.WriteByte('[')
		b.WriteString(strconv.Quote(k))
		b.WriteByte(']')
		return
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(k)
}
