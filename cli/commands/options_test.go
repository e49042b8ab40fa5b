package commands

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/docrender/docrender/client"
)

func TestParseOptions(t *testing.T) {
	pdf := reflect.TypeFor[client.PDFOptions]()
	tests := []struct {
		name string
		kvs  []string
		want string // JSON, "" for a usage error
	}{
		{"text and numbers", []string{"format=Letter", "scale=0.8", "printBackground=false"},
			`{"format":"Letter","printBackground":false,"scale":0.8}`},
		{"text fields stay text even when they look like JSON", []string{"fileName=2024", "documentId=42", "pageRanges=1-3", "waitDelay=500ms"},
			`{"documentId":"42","fileName":"2024","pageRanges":"1-3","waitDelay":"500ms"}`},
		{"dotted keys make objects", []string{"margin.top=2cm", "margin.left=1in", "metadata.title=Q3 report"},
			`{"margin":{"left":"1in","top":"2cm"},"metadata":{"title":"Q3 report"}}`},
		{"a JSON object", []string{`margin={"top":"1cm"}`}, `{"margin":{"top":"1cm"}}`},
		{"a list of text as a,b", []string{"metadata.keywords=a, b"}, `{"metadata":{"keywords":["a","b"]}}`},
		{"a list of text as JSON", []string{`metadata.keywords=["a,b"]`}, `{"metadata":{"keywords":["a,b"]}}`},
		{"map values are text", []string{"extraHttpHeaders.X-Num=7"}, `{"extraHttpHeaders":{"X-Num":"7"}}`},
		{"unknown fields: JSON or text", []string{"future=true", "other=some text"}, `{"future":true,"other":"some text"}`},
		{"empty value", []string{"headerTemplate="}, `{"headerTemplate":""}`},
		{"value with =", []string{"footerTemplate=<p a=b>"}, `{"footerTemplate":"\u003cp a=b\u003e"}`},
		{"no =", []string{"format"}, ""},
		{"empty key", []string{"=x"}, ""},
		{"empty key part", []string{"margin..top=1cm"}, ""},
		{"host is a flag", []string{"host=true"}, ""},
		{"value then object", []string{"margin=1cm", "margin.top=2cm"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseOptions(tt.kvs, pdf)
			if tt.want == "" {
				if exitCode(err) != ExitUsage {
					t.Fatalf("got %v, %v; want a usage error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tt.want {
				t.Errorf("got %s, want %s", b, tt.want)
			}
			// The client sends exactly that object.
			sent, _ := json.Marshal(client.PDFOptions{Extra: got})
			if string(sent) != tt.want {
				t.Errorf("client sends %s", sent)
			}
		})
	}
}
