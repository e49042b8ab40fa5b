package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The template calls against a fake service: what each sends (method,
// path, query, credentials, parts) and how it reads the answers.
func TestTemplateCalls(t *testing.T) {
	type sent struct{ method, path, query, key, auth, parts string }
	var (
		mu   sync.Mutex
		got  []sent
		fail bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sent{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("X-API-Key"), r.Header.Get("Authorization"), ""}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
			b, _ := io.ReadAll(r.Body)
			s.parts = parts(t, r.Header.Get("Content-Type"), string(b))
		}
		mu.Lock()
		got = append(got, s)
		failing := fail
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case failing:
			w.WriteHeader(500)
			w.Write([]byte(`{"statusCode":500,"code":"INTERNAL_SERVER_ERROR","message":"m"}`))
		case r.Method == "POST":
			w.WriteHeader(201)
			w.Write([]byte(`{"success":true,"data":{"id":"t1","name":"invoice","version":3,"createdAt":"2030-01-02T03:04:05.000Z","size":42}}`))
		case r.Method == "GET" && r.URL.Path == "/api/templates":
			w.Write([]byte(`{"success":true,"data":{"templates":[{"id":"t1","name":"invoice","latestVersion":3,"createdAt":"2030-01-02T03:04:05.000Z","updatedAt":"2030-01-03T03:04:05.000Z"}],"total":1},"pagination":{"page":2,"limit":5,"total":1,"totalPages":1}}`))
		case r.Method == "GET":
			w.Write([]byte(`{"success":true,"data":{"id":"t1","name":"invoice","latestVersion":2,"versions":[{"version":1,"createdAt":"2030-01-02T03:04:05.000Z","size":10,"entry":"index.html","files":["index.html"]},{"version":2,"createdAt":"2030-01-03T03:04:05.000Z","size":12,"entry":"index.html","files":["index.html","a.css"],"hasSampleData":true}]}}`))
		default:
			w.Write([]byte(`{"success":true,"message":"Template deleted."}`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := newTestClient(t, srv.URL)

	st, err := c.UploadTemplate(ctx, TemplateUpload{Name: "invoice", Files: []Upload{UploadBytes("index.html", []byte("<p>{{n}}</p>"))},
		SampleData: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "t1" || st.Version != 3 || st.Size != 42 || st.CreatedAt.Year() != 2030 {
		t.Fatalf("stored %+v", st)
	}
	list, err := c.Templates(ctx, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if list.Total != 1 || len(list.Templates) != 1 || list.Templates[0].LatestVersion != 3 || list.Pagination.Page != 2 {
		t.Fatalf("list %+v", list)
	}
	tp, err := c.Template(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if tp.Name != "invoice" || len(tp.Versions) != 2 || !tp.Versions[1].HasSampleData || tp.Versions[1].Files[1] != "a.css" {
		t.Fatalf("template %+v", tp)
	}
	if err := c.DeleteTemplate(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	// With a session only, the session is sent.
	s := newTestClient(t, srv.URL)
	s.SetAPIKey("")
	if _, err := s.Templates(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	want := []sent{
		{"POST", "/api/templates", "", "drk_test", "", "name=invoice;sampleData={\"n\":1};index.html=<p>{{n}}</p>;"},
		{"GET", "/api/templates", "limit=5&page=2", "drk_test", "", ""},
		{"GET", "/api/templates/t1", "", "drk_test", "", ""},
		{"DELETE", "/api/templates/t1", "", "drk_test", "", ""},
		{"GET", "/api/templates", "", "", "Bearer sess", ""},
	}
	for i, w := range want {
		if i >= len(got) || got[i] != w {
			t.Errorf("call %d sent %+v, want %+v", i, got[min(i, len(got)-1)], w)
		}
	}
	// An upload is not sent twice after a 500: it would be another version.
	mu.Lock()
	fail, got = true, nil
	mu.Unlock()
	_, err = c.UploadTemplate(ctx, TemplateUpload{Name: "x", Files: []Upload{UploadBytes("index.html", []byte("x"))}})
	var ae *Error
	if !errors.As(err, &ae) || ae.StatusCode != 500 || len(got) != 1 {
		t.Fatalf("after a 500: %v, %d sends", err, len(got))
	}
	if _, err := c.Template(ctx, ""); err == nil {
		t.Fatal("an empty ID was sent")
	}
}
