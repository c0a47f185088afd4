package main

import (
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/promoral/promoral/internal/wrap"
)

// helpWidth is the terminal width help text is wrapped to.
const helpWidth = 80

// wrapHelp makes every verb's --help read at an 80-column terminal: the
// long description reflowed paragraph by paragraph, the commands' one-line
// descriptions and the flags' usage wrapped under their own column.
func wrapHelp(root *cobra.Command) {
	cobra.AddTemplateFunc("wrapLong", wrapLong)
	cobra.AddTemplateFunc("wrapFlags", func(f *pflag.FlagSet) string { return f.FlagUsagesWrapped(helpWidth) })
	cobra.AddTemplateFunc("wrapShort", func(c *cobra.Command) string {
		// Printed after "  " and the name padded to NamePadding, then a space.
		return wrap.Indent(c.Short, "", strings.Repeat(" ", c.NamePadding()+3), helpWidth)
	})
	help := strings.Replace(root.HelpTemplate(), "{{. | trimTrailingWhitespaces}}", "{{wrapLong . | trimTrailingWhitespaces}}", 1)
	usage := root.UsageTemplate()
	for old, new := range map[string]string{
		"{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}":     "{{wrapFlags .LocalFlags | trimTrailingWhitespaces}}",
		"{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}": "{{wrapFlags .InheritedFlags | trimTrailingWhitespaces}}",
		"{{rpad .Name .NamePadding }} {{.Short}}":                  "{{rpad .Name .NamePadding }} {{wrapShort .}}",
	} {
		usage = strings.ReplaceAll(usage, old, new)
	}
	root.SetHelpTemplate(help)
	root.SetUsageTemplate(usage)
}

// wrapLong reflows a long description: a paragraph of plain lines (blank
// lines between paragraphs) is joined and wrapped; a line that starts
// with a space, "- " or "* " (a list or an example) keeps its place and
// is wrapped under its own indent.
func wrapLong(text string) string {
	var out []string
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, wrap.Words(strings.Join(para, " "), helpWidth)...)
			para = nil
		}
	}
	for _, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case trimmed == "":
			flush()
			out = append(out, "")
		case len(trimmed) < len(l) || strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* "):
			flush()
			if utf8.RuneCountInString(l) <= helpWidth {
				out = append(out, l) // as written: an example keeps its spacing
				continue
			}
			indent := l[:len(l)-len(trimmed)]
			rest := indent
			if strings.HasPrefix(trimmed, "- ") || strings.HasPrefix(trimmed, "* ") {
				rest += "  "
			}
			out = append(out, wrap.Indent(trimmed, indent, rest, helpWidth))
		default:
			para = append(para, l)
		}
	}
	flush()
	return strings.Join(out, "\n")
}
