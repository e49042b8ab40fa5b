package main

import (
	"encoding/json"
	"testing"
)

func TestConvert(t *testing.T) {
	defs := map[string]map[string]any{
		"a.Obj": {"type": "object", "description": "dropped", "properties": map[string]any{
			"port":  map[string]any{"$ref": "#/definitions/intstr.IntOrString"},
			"cpu":   map[string]any{"$ref": "#/definitions/" + quantityDef},
			"self":  map[string]any{"$ref": "#/definitions/a.Obj"},
			"tags":  map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
			"items": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/definitions/a.Leaf"}},
		}},
		"a.Leaf":             {"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}},
		"intstr.IntOrString": {"type": "string", "format": "int-or-string"},
	}
	c := converter{defs: defs}
	got := c.node(defs["a.Obj"], []string{"a.Obj"})
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"closed object", got["additionalProperties"], `false`},
		{"no description", got["description"], `null`},
		{"int or string", prop(got, "port"), `{"oneOf":[{"type":"string"},{"type":"integer"}]}`},
		{"quantity", prop(got, "cpu"), `{"oneOf":[{"type":"string"},{"type":"number"}]}`},
		{"recursion left open", prop(got, "self"), `{}`},
		{"maps stay open", prop(got, "tags"), `{"additionalProperties":{"type":"string"},"type":"object"}`},
		{"refs inlined in items", prop(got, "items")["items"], `{"additionalProperties":false,"properties":{"n":{"type":"integer"}},"required":["n"],"type":"object"}`},
	}
	for _, tc := range tests {
		b, _ := json.Marshal(tc.v)
		if string(b) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, b, tc.want)
		}
	}
}

func TestConvertCRD(t *testing.T) {
	in := map[string]any{"type": "object", "properties": map[string]any{
		"free":     map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": map[string]any{"a": map[string]any{"type": "string"}}},
		"maybe":    map[string]any{"type": "string", "nullable": true},
		"replicas": map[string]any{"x-kubernetes-int-or-string": true, "anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
	}}
	got := converter{}.node(in, nil)
	for name, want := range map[string]string{
		"free":     `{"properties":{"a":{"type":"string"}},"type":"object"}`,
		"maybe":    `{"type":["string","null"]}`,
		"replicas": `{"oneOf":[{"type":"string"},{"type":"integer"}]}`,
	} {
		if b, _ := json.Marshal(prop(got, name)); string(b) != want {
			t.Errorf("%s: got %s, want %s", name, b, want)
		}
	}
}

func prop(s map[string]any, name string) map[string]any {
	return s["properties"].(map[string]any)[name].(map[string]any)
}
