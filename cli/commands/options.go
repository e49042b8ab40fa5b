package commands

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/docrender/docrender/client"
)

var durationType = reflect.TypeFor[client.Duration]()

// parseOptions turns --option k=v flags into the options object. A dotted
// key sets a field of an object (margin.top=2cm). A value is text when the
// typed options (of type typ) say the field is text; otherwise it is JSON
// when it parses as JSON (true, 1.5, {"top":"1cm"}), else text. A list of
// text may be given as a,b,c. The service checks the values and names a
// bad field in its answer.
func parseOptions(kvs []string, typ reflect.Type) (map[string]any, error) {
	out := map[string]any{}
	for _, kv := range kvs {
		key, val, ok := strings.Cut(kv, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, usageErrorf("--option %q: want key=value, e.g. --option format=Letter", kv)
		}
		if key == "host" {
			return nil, usageErrorf("--option host: use the --host flag")
		}
		path := strings.Split(key, ".")
		for _, p := range path {
			if p == "" {
				return nil, usageErrorf("--option %q: empty part in the key", kv)
			}
		}
		v := optionValue(fieldType(typ, path), val)
		if err := setPath(out, path, v); err != nil {
			return nil, usageErrorf("--option %q: %v", kv, err)
		}
	}
	return out, nil
}

// fieldType is the type of the field at path in t, by JSON name (nil when unknown).
func fieldType(t reflect.Type, path []string) reflect.Type {
	for _, name := range path {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == nil:
			return nil
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			t = jsonField(t, name)
		default:
			return nil
		}
	}
	return t
}

// jsonField finds the field of struct t named name in JSON, embedded structs included.
func jsonField(t reflect.Type, name string) reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if ft := jsonField(et, name); ft != nil {
				return ft
			}
			continue
		}
		if tag == name {
			return f.Type
		}
	}
	return nil
}

// optionValue is the value of s for a field of type t (nil: unknown field).
func optionValue(t reflect.Type, s string) any {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Kind() == reflect.String || t == durationType) {
		return s
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	if t != nil && t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String {
		parts := strings.Split(s, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	return s
}

// setPath sets m[path[0]][path[1]]... = v, making the objects on the way.
func setPath(m map[string]any, path []string, v any) error {
	for i, p := range path[:len(path)-1] {
		next, ok := m[p]
		if !ok {
			child := map[string]any{}
			m[p] = child
			m = child
			continue
		}
		child, ok := next.(map[string]any)
		if !ok {
			return &exitError{code: ExitUsage, msg: strings.Join(path[:i+1], ".") + " is already set to a value, not an object"}
		}
		m = child
	}
	m[path[len(path)-1]] = v
	return nil
}
