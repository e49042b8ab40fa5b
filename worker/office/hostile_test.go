package office

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docrender/docrender/worker/office/officetest"
)

// macroODT is a text document whose Basic macro, bound to the document's
// load event, writes marker.
func macroODT(t testing.TB, marker string) []byte {
	scripts := `<office:scripts><office:event-listeners><script:event-listener script:language="ooo:script" script:event-name="dom:load" xlink:type="simple" xlink:href="vnd.sun.star.script:Standard.Module1.AutoRun?language=Basic&amp;location=document"/></office:event-listeners></office:scripts>`
	content := strings.Replace(officetest.ODTContent([]string{"A document with a macro"}, ""), "<office:body>", scripts+"<office:body>", 1)
	return officetest.ODT(t, content,
		officetest.Part{Name: "Basic/script-lc.xml", Body: `<?xml version="1.0" encoding="UTF-8"?>
<library:libraries xmlns:library="http://openoffice.org/2000/library" xmlns:xlink="http://www.w3.org/1999/xlink"><library:library library:name="Standard" library:link="false"/></library:libraries>`},
		officetest.Part{Name: "Basic/Standard/script-lb.xml", Body: `<?xml version="1.0" encoding="UTF-8"?>
<library:library xmlns:library="http://openoffice.org/2000/library" library:name="Standard" library:readonly="false" library:passwordprotected="false"><library:element library:name="Module1"/></library:library>`},
		officetest.Part{Name: "Basic/Standard/Module1.xml", Body: `<?xml version="1.0" encoding="UTF-8"?>
<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" script:language="StarBasic">Sub AutoRun
Open "` + marker + `" For Output As #1
Print #1, "macro ran"
Close #1
End Sub
</script:module>`},
	)
}

// remoteDocs link an image at base in each of the ways LibreOffice fetches
// one: an OOXML external relationship, an ODF linked image, an RTF
// INCLUDEPICTURE field.
func remoteDocs(t testing.TB, base string) []Input {
	const drawing = `<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:extent cx="952500" cy="952500"/><wp:docPr id="1" name="Picture 1"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:nvPicPr><pic:cNvPr id="1" name="remote.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:link="rIdImg"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="952500" cy="952500"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>`
	rels := `<Relationship Id="rIdImg" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="` + base + `/docx.png" TargetMode="External"/>`
	frame := `<text:p><draw:frame svg:width="2cm" svg:height="2cm" text:anchor-type="as-char"><draw:image xlink:href="` + base + `/odt.png" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/></draw:frame></text:p>`
	return []Input{
		{"remote.docx", officetest.Docx(t, officetest.DocxBody([]officetest.Para{{Text: "Remote image below"}})+drawing, rels)},
		{"remote.odt", officetest.ODT(t, officetest.ODTContent([]string{"Remote image below"}, frame))},
		{"remote.rtf", []byte(`{\rtf1\ansi Remote image below\par{\field{\*\fldinst INCLUDEPICTURE "` + base + `/rtf.png" \\d}{\fldrslt x}}\par}`)},
	}
}

// pngServer counts the requests it gets and answers each with a 1×1 PNG.
func pngServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		t.Logf("the test server was asked for %s", r.URL.Path)
		w.Header().Set("Content-Type", "image/png")
		w.Write(png)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// plainSoffice converts files with `soffice --convert-to pdf` on a default
// profile but for macro security (low): the control that shows what the
// hostile documents do when nothing guards against them.
func plainSoffice(t *testing.T, files ...string) {
	profile := t.TempDir()
	os.MkdirAll(filepath.Join(profile, "user"), 0o700)
	os.WriteFile(filepath.Join(profile, "user", "registrymodifications.xcu"), []byte(`<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>0</value></prop></item>
</oor:items>`), 0o600)
	args := append([]string{"--headless", "--norestore", "-env:UserInstallation=file://" + profile, "--convert-to", "pdf", "--outdir", t.TempDir()}, files...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "soffice", args...).CombinedOutput()
	if err != nil {
		t.Logf("control soffice: %v\n%s", err, out)
	}
}

// TestMacrosNeverRun: a document whose macro runs on load converts, and
// the macro's marker file never appears. The control (plain soffice, low
// macro security) shows the macro is real: there it runs.
func TestMacrosNeverRun(t *testing.T) {
	e := sharedEngine(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "engine-marker")
	pdf, _, err := e.Convert(context.Background(), Input{"macro.odt", macroODT(t, marker)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(inspect(t, pdf).text, "A document with a macro") {
		t.Error("the document's text is missing")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the macro ran in the engine: its marker file exists")
	}

	control := filepath.Join(dir, "control-marker")
	doc := filepath.Join(dir, "macro.odt")
	os.WriteFile(doc, macroODT(t, control), 0o600)
	plainSoffice(t, doc)
	if _, err := os.Stat(control); err != nil {
		// Debian's -nogui packages as installed by scripts/setup ship no
		// StarBasic runtime (libsblo.so) and no Python script provider, so
		// no document macro can run at all; the engine's guards (load with
		// NEVER_EXECUTE, a profile at "very high" with macros disabled)
		// are for an install that has them.
		t.Logf("control: the macro did not run under plain soffice either (StarBasic runtime present: %v)", basicInstalled(e.soffice))
	} else {
		t.Log("control: plain soffice with low macro security ran the macro")
	}
}

// basicInstalled says whether LibreOffice's StarBasic runtime is installed
// beside soffice.
func basicInstalled(soffice string) bool {
	real, err := filepath.EvalSymlinks(soffice)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(real), "libsblo.so"))
	return err == nil
}

// TestNoNetwork: documents linking remote images convert, and the server
// they link to hears nothing. The control shows plain soffice fetching.
func TestNoNetwork(t *testing.T) {
	e := sharedEngine(t)
	srv, hits := pngServer(t)
	for _, in := range remoteDocs(t, srv.URL) {
		t.Run(in.Name, func(t *testing.T) {
			pdf, _, err := e.Convert(context.Background(), in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(inspect(t, pdf).text, "Remote image below") {
				t.Error("the document's text is missing")
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the engine's LibreOffice made %d request(s) to the linked server", n)
	}
	t.Logf("slots in a network namespace of their own: %v", e.Isolated())

	dir := t.TempDir()
	var files []string
	for _, in := range remoteDocs(t, srv.URL) {
		p := filepath.Join(dir, in.Name)
		os.WriteFile(p, in.Data, 0o600)
		files = append(files, p)
	}
	plainSoffice(t, files...)
	t.Logf("control: plain soffice made %d request(s) for the same documents", hits.Load())
}

// TestZipBomb: a docx declaring gigabytes is refused before any slot sees
// it; one that stays under the declared bound but would take LibreOffice
// minutes and gigabytes is cut by the time bound, and the next converts.
func TestZipBomb(t *testing.T) {
	needOffice(t)
	e := newEngine(t, Config{Slots: 1, Timeout: 5 * time.Second, MaxMemory: 4 << 30})
	big := officetest.BombDocx(t, 1<<30, " ")
	t.Logf("declared bomb: %d bytes inflating to 1 GiB", len(big))
	_, _, err := e.Convert(context.Background(), Input{"bomb.docx", big}, Options{})
	var bad *BadInputError
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "inflate") {
		t.Fatalf("want a *BadInputError about inflating, got %v", err)
	}

	paras := officetest.BombDocx(t, 200<<20, `<w:p><w:r><w:t>bomb</w:t></w:r></w:p>`)
	t.Logf("paragraph bomb: %d bytes inflating to 200 MiB", len(paras))
	began := time.Now()
	_, _, err = e.Convert(context.Background(), Input{"paragraphs.docx", paras}, Options{})
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrCrashed) {
		t.Fatalf("want ErrTimeout or ErrCrashed, got %v", err)
	}
	t.Logf("paragraph bomb: %v after %s", err, time.Since(began).Round(time.Millisecond))
	convertsNext(t, e)
}

// convertsNext checks that e converts a small document now.
func convertsNext(t *testing.T, e *Engine) {
	t.Helper()
	began := time.Now()
	pdf, _, err := e.Convert(context.Background(), Input{"next.txt", []byte("the next document")}, Options{})
	if err != nil {
		t.Fatalf("the next document failed: %v", err)
	}
	if !strings.Contains(inspect(t, pdf).text, "the next document") {
		t.Fatal("the next document's text is missing")
	}
	t.Logf("the next document converted after %s (slot restart included)", time.Since(began).Round(time.Millisecond))
}

// groupGone says whether no process of the process group pgid is left
// (waiting a little: the kernel reaps a killed process asynchronously).
func groupGone(pgid int) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(-pgid, 0) == syscall.ESRCH {
			return true
		}
	}
	out, _ := exec.Command("ps", "-o", "pid,ppid,stat,comm", "-g", fmt.Sprint(pgid)).CombinedOutput()
	fmt.Fprintf(os.Stderr, "left in group %d:\n%s", pgid, out)
	return false
}

// TestHang: a document past Timeout fails with ErrTimeout, its slot's
// whole process group is killed, and the slot (restarted) converts the next.
func TestHang(t *testing.T) {
	e := newEngine(t, Config{Slots: 1, Timeout: 5 * time.Millisecond})
	s := e.slots[0]
	old := s.current()
	_, _, err := e.Convert(context.Background(), Input{"slow.docx", manyPages(t, 20)}, Options{})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "slow.docx") {
		t.Fatalf("want ErrTimeout naming slow.docx, got %v", err)
	}
	if !groupGone(old.cmd.Process.Pid) {
		t.Error("processes of the killed slot are left")
	}
	e.cfg.Timeout = time.Minute
	convertsNext(t, e)
	if now := s.current(); now == nil || now.soffice == old.soffice {
		t.Error("the slot was not restarted")
	}
}

// TestCrash: LibreOffice killed (-9) mid-conversion fails that document
// with ErrCrashed; the slot restarts and converts the next.
func TestCrash(t *testing.T) {
	e := newEngine(t, Config{Slots: 1, Timeout: time.Minute})
	s := e.slots[0]
	old := s.current()
	done := make(chan error, 1)
	go func() {
		_, _, err := e.Convert(context.Background(), Input{"victim.docx", manyPages(t, 600)}, Options{})
		done <- err
	}()
	// Wait for the document to reach the slot, then give LibreOffice a
	// moment into it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(s.dir, "io", "doc.docx")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the document never reached the slot")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond)
	if err := syscall.Kill(old.soffice, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "victim.docx") {
		t.Fatalf("want ErrCrashed naming victim.docx, got %v", err)
	}
	if !groupGone(old.cmd.Process.Pid) {
		t.Error("processes of the crashed slot are left")
	}
	convertsNext(t, e)
}

// TestCancel: a caller that gives up mid-conversion gets its context's
// error; the slot is restarted for the next.
func TestCancel(t *testing.T) {
	e := newEngine(t, Config{Slots: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, _, err := e.Convert(ctx, Input{"long.docx", manyPages(t, 20)}, Options{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	convertsNext(t, e)
}

// TestConcurrent: two slots convert at once, each document to its own PDF.
func TestConcurrent(t *testing.T) {
	e := sharedEngine(t)
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			word := fmt.Sprintf("Document%dOnly", i)
			pdf, _, err := e.Convert(context.Background(), Input{fmt.Sprintf("d%d.docx", i), officetest.Docx(t, officetest.DocxBody([]officetest.Para{{Text: word}}), "")}, Options{})
			if err == nil && !strings.Contains(inspect(t, pdf).text, word) {
				err = fmt.Errorf("d%d.docx: its PDF lacks %s", i, word)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestMaxDocuments: a slot is restarted after MaxDocuments documents.
func TestMaxDocuments(t *testing.T) {
	e := newEngine(t, Config{Slots: 1, MaxDocuments: 2})
	s := e.slots[0]
	first := s.current()
	for i := range 3 {
		if _, _, err := e.Convert(context.Background(), Input{"a.txt", []byte("text")}, Options{}); err != nil {
			t.Fatal(i, err)
		}
		now := s.current()
		switch {
		case i == 0 && now != first:
			t.Fatal("restarted after 1 document")
		case i == 1 && now == first:
			t.Fatal("not restarted after 2 documents")
		case i == 2 && (now == nil || now.soffice == first.soffice):
			t.Fatal("the third document did not run on a new LibreOffice")
		}
	}
	if !groupGone(first.cmd.Process.Pid) {
		t.Error("processes of the recycled slot are left")
	}
}

func FuzzConvert(f *testing.F) {
	f.Add("a.txt", []byte("hello"))
	f.Add("a.docx", officetest.Docx(f, officetest.DocxBody([]officetest.Para{{Text: "fuzz"}}), ""))
	f.Add("a.rtf", []byte(`{\rtf1 x}`))
	f.Add("a.csv", []byte("a,b\n1,2\n"))
	f.Add("a.odt", []byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		e := sharedEngine(t)
		pdf, _, err := e.Convert(context.Background(), Input{name, data}, Options{})
		var bad *BadInputError
		switch {
		case err == nil:
			if !bytes.HasPrefix(pdf, []byte("%PDF-")) {
				t.Fatal("not a PDF")
			}
		case errors.As(err, &bad), errors.Is(err, ErrTimeout), errors.Is(err, ErrCrashed):
		default:
			t.Fatalf("%s: unexpected error %v", name, err)
		}
	})
}
