package tmpl

import "testing"

func TestSmoke(t *testing.T) {
	src := `<!DOCTYPE html>
<html lang="de-DE"><body>
<h1 title="{{title}}">{{title}}</h1>
<a href="{{url}}">x</a>
<img srcset="{{img}} 2x, /a.png 1x" src="{{qr code}}">
{{#each items as |it|}}<p>{{@index}} {{it.name}} {{formatNumber price 2}} {{formatCurrency price "EUR"}} {{#if @first}}first{{else}}rest{{/if}}</p>{{/each}}
{{formatDate when "Monday, 2 January 2006"}}
</body></html>`
	tp, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(tp.Lang)
	data, err := DecodeData([]byte(`{"title":"<script>alert(1)</script>\" onmouseover=\"x","url":" JaVaScRiPt:alert(1)","img":"javascript:x","code":"hi","items":[{"name":"a","price":1234.5},{"name":"b","price":"2.675"}],"when":"2024-03-04"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tp.Render(data)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out[:min(len(out), 3000)])
}
