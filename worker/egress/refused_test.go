package egress

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A lane notes what the egress rules refused the page of the job it
// serves, for that job only: each refusal once, a tunnel by the host and
// port it named; a failed URL the page saw is recognised as one of them.
func TestLaneNotesRefusalsPerJob(t *testing.T) {
	p := startProxy(t)
	lane := newLane(t, p)
	c := client(t, lane.Addr())
	site, done := lane.Serve(Bundle{"index.html": []byte("x")}, false)
	for range 2 {
		if got := get(t, c, "http://169.254.169.254/x.png?a=1", nil); got.status != 403 {
			t.Fatalf("metadata address: %d %q", got.status, got.body)
		}
	}
	if _, err := c.Get("https://169.254.169.254/y.png"); err == nil {
		t.Fatal("a tunnel to the metadata address was allowed")
	}
	get(t, c, site.URL("missing.png"), nil) // a 404 of the bundle is no refusal
	want := []Refusal{{URL: "http://169.254.169.254/x.png?a=1"}, {URL: "169.254.169.254:443", Tunnel: true}}
	if got := site.Refused(); !slices.Equal(got, want) {
		t.Fatalf("refused %+v, want %+v", got, want)
	}
	for u, refused := range map[string]bool{
		"http://169.254.169.254/x.png?a=1":   true,
		"https://169.254.169.254/other.png":  true,
		"wss://169.254.169.254:443/socket":   true,
		"http://169.254.169.254/x.png":       false,
		"https://169.254.169.254:8443/y.png": false,
		site.URL("missing.png"):              false,
		"data:image/png;base64,AAAA":         false,
	} {
		if _, ok := site.RefusalOf(u); ok != refused {
			t.Errorf("RefusalOf(%q) = %v, want %v", u, ok, refused)
		}
	}
	done()

	get(t, c, "http://169.254.169.254/after.png", nil) // no job's
	next, doneNext := lane.Serve(Bundle{}, false)
	defer doneNext()
	if got := next.Refused(); len(got) != 0 {
		t.Errorf("the next job on the lane starts with %+v", got)
	}
	if got := site.Refused(); len(got) != 2 {
		t.Errorf("a refusal after the job was noted for it: %+v", got)
	}
}

// A hostile page may ask for any number of addresses of any length: the
// lane keeps maxRefusals of them, each cut to maxRefusalURL, and still
// recognises a cut one.
func TestRefusalsAreBounded(t *testing.T) {
	var r refusals
	site := Site{token: "t", refused: &r}
	long := "http://10.0.0.1/" + strings.Repeat("é", 3000)
	r.add(Refusal{URL: long})
	for i := range 2 * maxRefusals {
		r.add(Refusal{URL: fmt.Sprintf("http://10.0.0.1/%d", i)})
	}
	got := site.Refused()
	if len(got) != maxRefusals {
		t.Fatalf("%d refusals kept, want %d", len(got), maxRefusals)
	}
	if u := got[0].URL; len(u) > maxRefusalURL || !strings.HasSuffix(u, "é…") {
		t.Errorf("long URL kept as %d bytes ending %q", len(u), u[len(u)-8:])
	}
	if _, ok := site.RefusalOf(long); !ok {
		t.Error("the long URL is not recognised")
	}
}

// Relative names the site's files by their paths in the bundle, whichever
// way the page was loaded; other addresses stay as they are.
func TestSiteRelative(t *testing.T) {
	p := startProxy(t)
	lane := newLane(t, p)
	site, done := lane.Serve(Bundle{}, false)
	defer done()
	other, doneOther := newLane(t, p).Serve(Bundle{}, false)
	defer doneOther()
	for in, want := range map[string]string{
		site.URL("img/a b.png"):                              "img/a%20b.png",
		site.HomeURL("css/x.css"):                            "css/x.css",
		"Error: boom\n    at " + site.URL("app.js") + ":3:9": "Error: boom\n    at app.js:3:9",
		other.URL("img/a.png"):                               other.URL("img/a.png"),
		"https://cdn.example/x.png":                          "https://cdn.example/x.png",
	} {
		if got := site.Relative(in); got != want {
			t.Errorf("Relative(%q) = %q, want %q", in, got, want)
		}
	}
}
