package report

import (
	"fmt"
	"html/template"
	"strings"
)

// renderMarkdown writes the same document as GitHub-flavoured Markdown,
// with the figures as PNG files beside it.
func renderMarkdown(d *doc, footer string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# %s\n\n", mdText(d.Title))
	if d.Subtitle != "" {
		w("%s\n\n", mdText(d.Subtitle))
	}
	if len(d.Meta) > 0 {
		w("| | |\n|---|---|\n")
		for _, m := range d.Meta {
			v := m.V
			if m.Title != "" {
				v = m.Title
			}
			w("| %s | %s |\n", mdCell(m.K), mdCell(v))
		}
		w("\n")
	}
	if len(d.Cards) > 0 {
		var hs, seps, vs []string
		for _, c := range d.Cards {
			hs = append(hs, mdCell(c.Label))
			seps = append(seps, "---:")
			v := "**" + mdCell(c.Value) + "**"
			if c.Sub != "" {
				v += " (" + mdCell(c.Sub) + ")"
			}
			vs = append(vs, v)
		}
		w("| %s |\n| %s |\n| %s |\n\n", strings.Join(hs, " | "), strings.Join(seps, " | "), strings.Join(vs, " | "))
	}
	if len(d.Hilite) > 0 {
		w("**At a glance**\n\n")
		for _, c := range d.Hilite {
			w("- %s: **%s** (%s)\n", mdText(c.Label), mdText(c.Value), mdText(c.Sub))
		}
		w("\n")
	}
	if len(d.Sections) > 0 {
		w("Contents: ")
		var links []string
		for _, s := range d.Sections {
			links = append(links, fmt.Sprintf("[%s](#%s)", mdText(s.Title), mdAnchor(s.Title)))
		}
		w("%s\n\n", strings.Join(links, " · "))
	}
	for _, s := range d.Sections {
		w("## %s\n\n", mdText(s.Title))
		if s.Intro != "" {
			w("%s\n\n", mdText(s.Intro))
		}
		for _, blk := range s.Blocks {
			switch x := blk.(type) {
			case *table:
				mdTable(&b, x)
			case *figure:
				w("### %s\n\n![%s](%s)\n\n*%s* ([SVG](%s))\n\n", mdText(x.Title), mdText(x.Title), x.PNGFile, mdText(x.Caption), x.SVGFile)
			case *note:
				w("> %s\n\n", mdText(x.Text))
			case *transcript:
				mdTranscript(&b, x)
			case *heading:
				w("### %s\n\n", mdText(x.Text))
			case []string:
				for _, t := range x {
					w("- %s\n", mdText(t))
				}
				w("\n")
			}
		}
	}
	w("---\n\n%s\n", mdText(footer))
	return b.String()
}

func mdTable(b *strings.Builder, t *table) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if t.Title != "" {
		w("### %s\n\n", mdText(t.Title))
	}
	if t.Collapse != "" {
		w("<details><summary>%s</summary>\n\n", template.HTMLEscapeString(t.Collapse))
	}
	var hs, seps []string
	for _, c := range t.Cols {
		name := c.Name
		if c.Group != "" {
			name = c.Group + " " + name
		}
		switch c.Better {
		case 1:
			name += " ↑"
		case -1:
			name += " ↓"
		}
		hs = append(hs, mdCell(name))
		if c.Num {
			seps = append(seps, "---:")
		} else {
			seps = append(seps, "---")
		}
	}
	w("| %s |\n| %s |\n", strings.Join(hs, " | "), strings.Join(seps, " | "))
	for _, r := range t.Rows {
		var cs []string
		for _, c := range r.Cells {
			v := mdCell(c.Text)
			if c.Code {
				v = "`" + strings.ReplaceAll(c.Text, "`", "'") + "`"
			}
			if c.Best && v != "" {
				v = "**" + v + "**"
			}
			if c.Sub != "" {
				v += " <sub>" + mdCell(c.Sub) + "</sub>"
			}
			cs = append(cs, v)
		}
		w("| %s |\n", strings.Join(cs, " | "))
	}
	w("\n")
	if t.Caption != "" {
		w("%s\n\n", mdText(t.Caption))
	}
	if t.Collapse != "" {
		w("</details>\n\n")
	}
}

func mdTranscript(b *strings.Builder, t *transcript) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("Case `%s`: %s.\n\n", t.CaseID, mdText(t.Why))
	if len(t.Outcome) > 0 {
		var parts []string
		for _, kv := range t.Outcome {
			parts = append(parts, fmt.Sprintf("**%s** %s", mdText(kv.K), mdText(kv.V)))
		}
		w("%s\n\n", strings.Join(parts, " · "))
	}
	for i, tu := range t.Turns {
		w("#### Call %d: %s\n\n", i+1, mdText(tu.Stage))
		if len(tu.Meta) > 0 {
			w("*%s*\n\n", mdText(strings.Join(tu.Meta, " · ")))
		}
		if tu.Earlier > 0 {
			w("*(%s as shown above)*\n\n", plural(tu.Earlier, "earlier message"))
		}
		for _, m := range tu.Msgs {
			w("**%s**\n\n%s\n\n", mdText(m.Role), fence(m.Content))
		}
		if tu.Err != "" {
			w("**error**\n\n%s\n\n", fence(tu.Err))
		}
		if tu.Reply != "" || tu.Err == "" {
			w("**reply**\n\n%s\n\n", fence(tu.Reply))
		}
	}
	if len(t.Judge) > 0 {
		w("#### The judge's verdict\n\n| | |\n|---|---|\n")
		for _, kv := range t.Judge {
			w("| %s | %s |\n", mdCell(kv.K), mdCell(kv.V))
		}
		w("\n")
	}
}

// fence wraps text in a code fence longer than any backtick run inside.
func fence(s string) string {
	n := 3
	run := 0
	for _, ch := range s {
		if ch == '`' {
			run++
			if run >= n {
				n = run + 1
			}
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", n)
	return f + "text\n" + s + "\n" + f
}

func mdText(s string) string {
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	return mdText(s)
}

// mdAnchor is GitHub's heading anchor for a title.
func mdAnchor(title string) string {
	var b strings.Builder
	for _, ch := range strings.ToLower(title) {
		switch {
		case ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9', ch == '-', ch == '_':
			b.WriteRune(ch)
		case ch == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
