package apidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// node is a JSON value that keeps the order of its object's keys: the
// reference lists paths, fields and answers in the order the document
// gives them, as its authors meant them to be read.
type node struct {
	keys   []string
	fields map[string]*node
	items  []*node
	// value is a scalar: string, json.Number, bool or nil.
	value any
}

// parse reads a JSON document into a node tree.
func parse(doc []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		return nil, fmt.Errorf("apidoc: parse: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("apidoc: parse: trailing data")
	}
	return n, nil
}

func decodeNode(dec *json.Decoder) (*node, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := t.(json.Delim)
	if !ok {
		return &node{value: t}, nil
	}
	n := &node{}
	switch d {
	case '{':
		n.fields = map[string]*node{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ := k.(string)
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			if _, dup := n.fields[key]; !dup {
				n.keys = append(n.keys, key)
			}
			n.fields[key] = v
		}
	case '[':
		n.items = []*node{}
		for dec.More() {
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, err
	}
	return n, nil
}

// get follows keys from n; nil when any is missing.
func (n *node) get(keys ...string) *node {
	for _, k := range keys {
		if n == nil || n.fields == nil {
			return nil
		}
		n = n.fields[k]
	}
	return n
}

// str is the string at keys, "" when absent or not a string.
func (n *node) str(keys ...string) string {
	s, _ := n.get(keys...).scalar().(string)
	return s
}

func (n *node) scalar() any {
	if n == nil {
		return nil
	}
	return n.value
}

// has reports whether n is an object with key k.
func (n *node) has(k string) bool { return n != nil && n.fields != nil && n.fields[k] != nil }

// each calls f for every key of n in the document's order.
func (n *node) each(f func(k string, v *node)) {
	if n == nil {
		return
	}
	for _, k := range n.keys {
		f(k, n.fields[k])
	}
}

// strings is n's items that are strings (a "required" or "enum" list).
func (n *node) strings() []string {
	if n == nil {
		return nil
	}
	var out []string
	for _, it := range n.items {
		out = append(out, it.text())
	}
	return out
}

// text shows a scalar as the document wrote it ("A4", 0.3, true, null);
// objects and arrays as compact JSON.
func (n *node) text() string {
	switch {
	case n == nil:
		return ""
	case n.fields != nil || n.items != nil:
		var b strings.Builder
		n.writeJSON(&b)
		return b.String()
	}
	switch v := n.value.(type) {
	case string:
		return v
	case nil:
		return "null"
	default:
		return fmt.Sprint(v)
	}
}

func (n *node) writeJSON(b *strings.Builder) {
	switch {
	case n.fields != nil:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteString(": ")
			n.fields[k].writeJSON(b)
		}
		b.WriteByte('}')
	case n.items != nil:
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteString(", ")
			}
			it.writeJSON(b)
		}
		b.WriteByte(']')
	default:
		vb, _ := json.Marshal(n.value)
		b.Write(vb)
	}
}
