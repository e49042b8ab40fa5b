package apidoc

import (
	"html"
	"html/template"
	"strings"
)

// The descriptions of the document are CommonMark (OpenAPI says so). The
// reference needs the little of it the document uses: paragraphs, "- "
// lists, pipe tables, `code` and **bold**. Everything is escaped first;
// only those few tags are ever written, so a description cannot inject
// markup into the page.

// markdown renders a description as HTML blocks.
func markdown(s string) template.HTML {
	var b strings.Builder
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); {
		line := strings.TrimSpace(lines[i])
		switch {
		case line == "":
			i++
		case strings.HasPrefix(line, "|"):
			i = writeTable(&b, lines, i)
		case strings.HasPrefix(line, "- "):
			b.WriteString("<ul>")
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "- "); i++ {
				b.WriteString("<li>" + inline(strings.TrimSpace(lines[i])[2:]) + "</li>")
			}
			b.WriteString("</ul>")
		default:
			var para []string
			for ; i < len(lines); i++ {
				l := strings.TrimSpace(lines[i])
				if l == "" || strings.HasPrefix(l, "|") || strings.HasPrefix(l, "- ") {
					break
				}
				para = append(para, l)
			}
			b.WriteString("<p>" + inline(strings.Join(para, " ")) + "</p>")
		}
	}
	return template.HTML(b.String())
}

// markdownInline renders a one-line description without a paragraph.
func markdownInline(s string) template.HTML {
	return template.HTML(inline(strings.Join(strings.Fields(s), " ")))
}

// writeTable writes the pipe table starting at lines[i] and returns the
// index after it. The second row is the |---| separator.
func writeTable(b *strings.Builder, lines []string, i int) int {
	var rows [][]string
	for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		l := strings.Trim(strings.TrimSpace(lines[i]), "|")
		rows = append(rows, strings.Split(l, "|"))
	}
	b.WriteString("<table>")
	for r, cells := range rows {
		if r == 1 && strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue
		}
		tag := "td"
		if r == 0 {
			tag = "th"
		}
		b.WriteString("<tr>")
		for _, c := range cells {
			b.WriteString("<" + tag + ">" + inline(strings.TrimSpace(c)) + "</" + tag + ">")
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	return i
}

// inline escapes s and renders `code` spans and **bold**.
func inline(s string) string {
	var b strings.Builder
	for i, part := range strings.Split(s, "`") {
		if i%2 == 1 {
			b.WriteString("<code>" + html.EscapeString(part) + "</code>")
			continue
		}
		for j, t := range strings.Split(html.EscapeString(part), "**") {
			if j%2 == 1 {
				b.WriteString("<strong>" + t + "</strong>")
			} else {
				b.WriteString(t)
			}
		}
	}
	return b.String()
}
