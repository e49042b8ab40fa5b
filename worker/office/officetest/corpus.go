// Package officetest writes office documents from code for tests: the
// engine's own and the service's end-to-end ones. Each is the smallest
// package LibreOffice accepts as its format, so a test says exactly what it
// feeds.
package officetest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"strings"
)

// T is what the builders need of a test: testing.TB has it, and so can a
// benchmark program that is not a test.
type T interface {
	Helper()
	Fatal(args ...any)
}

// Part is one file of a ZIP package.
type Part struct {
	Name  string
	Body  string
	Store bool // stored, not deflated (ODF's mimetype must be)
}

// Zip is a ZIP package of parts, in order.
func Zip(t T, parts ...Part) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		method := zip.Deflate
		if p.Store {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: p.Name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(p.Body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// WNS declares WordprocessingML's namespaces (w:, r:) on a document's root.
const WNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`

// Para is one Word paragraph: its text, font and whether a page break
// comes before it.
type Para struct {
	Text      string
	Font      string
	BreakPage bool
}

// DocxBody is document.xml's paragraphs for paras.
func DocxBody(paras []Para) string {
	var b strings.Builder
	for _, p := range paras {
		b.WriteString("<w:p>")
		if p.BreakPage {
			b.WriteString(`<w:pPr><w:pageBreakBefore/></w:pPr>`)
		}
		b.WriteString("<w:r>")
		if p.Font != "" {
			fmt.Fprintf(&b, `<w:rPr><w:rFonts w:ascii="%[1]s" w:hAnsi="%[1]s" w:cs="%[1]s"/></w:rPr>`, p.Font)
		}
		fmt.Fprintf(&b, `<w:t xml:space="preserve">%s</w:t></w:r></w:p>`, html.EscapeString(p.Text))
	}
	return b.String()
}

// Docx is a Word document of body (document.xml's <w:body> content), with
// extra parts and relationships (document.xml.rels entries) when given.
// sectPr: A4 portrait, so page sizes are known.
func Docx(t T, body string, rels string, extra ...Part) []byte {
	t.Helper()
	parts := []Part{
		{Name: "[Content_Types].xml", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Default Extension="png" ContentType="image/png"/>
<Default Extension="bin" ContentType="application/vnd.ms-office.vbaProject"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
</Types>`},
		{Name: "_rels/.rels", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
</Relationships>`},
		{Name: "word/_rels/document.xml.rels", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels + `</Relationships>`},
		{Name: "word/document.xml", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document ` + WNS + `><w:body>` + body +
			`<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/></w:sectPr></w:body></w:document>`},
	}
	return Zip(t, append(parts, extra...)...)
}

// Xlsx is a workbook of sheets, each a list of rows of inline strings.
func Xlsx(t T, sheets [][][]string) []byte {
	t.Helper()
	var ct, wb, rels strings.Builder
	var parts []Part
	for i, rows := range sheets {
		n := i + 1
		fmt.Fprintf(&ct, `<Override PartName="/xl/worksheets/sheet%d.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`, n)
		fmt.Fprintf(&wb, `<sheet name="Sheet%d" sheetId="%d" r:id="rId%d"/>`, n, n, n)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet%d.xml"/>`, n, n)
		var data strings.Builder
		for r, row := range rows {
			fmt.Fprintf(&data, `<row r="%d">`, r+1)
			for c, v := range row {
				fmt.Fprintf(&data, `<c r="%c%d" t="inlineStr"><is><t>%s</t></is></c>`, 'A'+c, r+1, html.EscapeString(v))
			}
			data.WriteString("</row>")
		}
		parts = append(parts, Part{Name: fmt.Sprintf("xl/worksheets/sheet%d.xml", n), Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` + data.String() + `</sheetData></worksheet>`})
	}
	return Zip(t, append([]Part{
		{Name: "[Content_Types].xml", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` + ct.String() + `</Types>`},
		{Name: "_rels/.rels", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>
</Relationships>`},
		{Name: "xl/workbook.xml", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>` + wb.String() + `</sheets></workbook>`},
		{Name: "xl/_rels/workbook.xml.rels", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels.String() + `</Relationships>`},
	}, parts...)...)
}

// Pptx is a presentation of one text box per slide (16:9).
func Pptx(t T, slides []string) []byte {
	t.Helper()
	const pNS = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`
	var ct, ids, rels strings.Builder
	parts := []Part{
		{Name: "ppt/slideMasters/slideMaster1.xml", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:sldMaster ` + pNS + `><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/></p:spTree></p:cSld><p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/><p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>`},
		{Name: "ppt/slideMasters/_rels/slideMaster1.xml.rels", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideLayout" Target="../slideLayouts/slideLayout1.xml"/></Relationships>`},
		{Name: "ppt/slideLayouts/slideLayout1.xml", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:sldLayout ` + pNS + `><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/></p:spTree></p:cSld></p:sldLayout>`},
		{Name: "ppt/slideLayouts/_rels/slideLayout1.xml.rels", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideMaster" Target="../slideMasters/slideMaster1.xml"/></Relationships>`},
	}
	for i, text := range slides {
		n := i + 1
		fmt.Fprintf(&ct, `<Override PartName="/ppt/slides/slide%d.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>`, n)
		fmt.Fprintf(&ids, `<p:sldId id="%d" r:id="rId%d"/>`, 255+n, n+1)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide%d.xml"/>`, n+1, n)
		parts = append(parts,
			Part{Name: fmt.Sprintf("ppt/slides/slide%d.xml", n), Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:sld ` + pNS + `><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>
<p:sp><p:nvSpPr><p:cNvPr id="2" name="Text"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr><a:xfrm><a:off x="838200" y="838200"/><a:ext cx="10515600" cy="1325563"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr>
<p:txBody><a:bodyPr/><a:lstStyle/><a:p><a:r><a:rPr lang="en-US" sz="4000"/><a:t>` + html.EscapeString(text) + `</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sld>`},
			Part{Name: fmt.Sprintf("ppt/slides/_rels/slide%d.xml.rels", n), Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideLayout" Target="../slideLayouts/slideLayout1.xml"/></Relationships>`})
	}
	return Zip(t, append([]Part{
		{Name: "[Content_Types].xml", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>
<Override PartName="/ppt/slideMasters/slideMaster1.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slideMaster+xml"/>
<Override PartName="/ppt/slideLayouts/slideLayout1.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slideLayout+xml"/>` + ct.String() + `</Types>`},
		{Name: "_rels/.rels", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/>
</Relationships>`},
		{Name: "ppt/presentation.xml", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:presentation ` + pNS + `><p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst><p:sldIdLst>` + ids.String() + `</p:sldIdLst><p:sldSz cx="12192000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>`},
		{Name: "ppt/_rels/presentation.xml.rels", Body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideMaster" Target="slideMasters/slideMaster1.xml"/>` + rels.String() + `</Relationships>`},
	}, parts...)...)
}

// ODTContent is an ODF text document's content.xml of paragraphs, with
// extra body markup (after the paragraphs) and scripts (office:scripts).
func ODTContent(paras []string, extra string) string {
	var b strings.Builder
	for _, p := range paras {
		fmt.Fprintf(&b, "<text:p>%s</text:p>", html.EscapeString(p))
	}
	return `<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:script="urn:oasis:names:tc:opendocument:xmlns:script:1.0" xmlns:ooo="http://openoffice.org/2004/office" office:version="1.3"><office:body><office:text>` + b.String() + extra + `</office:text></office:body></office:document-content>`
}

// ODT is an ODF text document of content.xml and extra parts (listed in
// the manifest).
func ODT(t T, content string, extra ...Part) []byte {
	t.Helper()
	var manifest strings.Builder
	for _, p := range extra {
		fmt.Fprintf(&manifest, `<manifest:file-entry manifest:full-path="%s" manifest:media-type="text/xml"/>`, p.Name)
	}
	parts := []Part{
		{Name: "mimetype", Body: "application/vnd.oasis.opendocument.text", Store: true},
		{Name: "META-INF/manifest.xml", Body: `<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">
<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>
<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>` + manifest.String() + `</manifest:manifest>`},
		{Name: "content.xml", Body: content},
	}
	return Zip(t, append(parts, extra...)...)
}

// EncryptedODT is an ODF 1.2 text document whose content.xml is encrypted
// with password as LibreOffice does it (deflate, then AES-256-CBC with a
// PBKDF2 key from the password's SHA-256): LibreOffice must ask for the
// password, which the slot answers with "no".
func EncryptedODT(t T, password string) []byte {
	t.Helper()
	content := []byte(ODTContent([]string{"Top secret"}, ""))
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.DefaultCompression)
	fw.Write(content)
	fw.Close()
	compressed := z.Bytes()
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	start := sha256.Sum256([]byte(password))
	key, err := pbkdf2.Key(sha1.New, string(start[:]), salt, 1024, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := aes.BlockSize - len(compressed)%aes.BlockSize
	plain := append(bytes.Clone(compressed), bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, _ := aes.NewCipher(key)
	sealed := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(sealed, plain)
	sum := sha256.Sum256(compressed[:min(1024, len(compressed))])
	b64 := base64.StdEncoding.EncodeToString
	manifest := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">
<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>
<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml" manifest:size="%d">
<manifest:encryption-data manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k" manifest:checksum="%s">
<manifest:algorithm manifest:algorithm-name="http://www.w3.org/2001/04/xmlenc#aes256-cbc" manifest:initialisation-vector="%s"/>
<manifest:start-key-generation manifest:start-key-generation-name="http://www.w3.org/2000/09/xmldsig#sha256" manifest:key-size="32"/>
<manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:key-size="32" manifest:iteration-count="1024" manifest:salt="%s"/>
</manifest:encryption-data></manifest:file-entry></manifest:manifest>`, len(content), b64(sum[:]), b64(iv), b64(salt))
	return Zip(t,
		Part{Name: "mimetype", Body: "application/vnd.oasis.opendocument.text", Store: true},
		Part{Name: "META-INF/manifest.xml", Body: manifest},
		Part{Name: "content.xml", Body: string(sealed), Store: true},
	)
}

// BombDocx is a docx whose document.xml inflates to size bytes of rep.
func BombDocx(t T, size int, rep string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	small := Docx(t, "", "")
	zr, _ := zip.NewReader(bytes.NewReader(small), int64(len(small)))
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			continue
		}
		w, _ := zw.Create(f.Name)
		r, _ := f.Open()
		io.Copy(w, r)
		r.Close()
	}
	w, _ := zw.Create("word/document.xml")
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document `+WNS+`><w:body>`)
	chunk := []byte(strings.Repeat(rep, 1<<16/len(rep)))
	for n := 0; n < size; n += len(chunk) {
		w.Write(chunk)
	}
	io.WriteString(w, `</w:body></w:document>`)
	zw.Close()
	return b.Bytes()
}
