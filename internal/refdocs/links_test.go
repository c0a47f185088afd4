package refdocs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fence      = regexp.MustCompile("(?ms)^```.*?^```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	heading    = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
)

// anchors are the fragment names GitHub gives a document's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// Every relative link in the repository's Markdown names a file that exists
// and, with a #fragment into a Markdown file, a heading it has.
func TestMarkdownLinksResolve(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "out", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := inlineCode.ReplaceAllString(fence.ReplaceAllString(string(data), ""), "")
		rel, _ := filepath.Rel(root, path)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			}
			checked++
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %q: %s does not exist", rel, target, file)
				continue
			}
			if frag == "" || info.IsDir() || !strings.HasSuffix(dest, ".md") {
				continue
			}
			doc, err := os.ReadFile(dest)
			if err != nil {
				return err
			}
			if !anchors(string(doc))[frag] {
				t.Errorf("%s: link %q: no heading of %s makes the anchor #%s", rel, target, filepath.Base(dest), frag)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d links checked: is the walk reading the repository?", checked)
	}
}

func TestAnchors(t *testing.T) {
	a := anchors("# Title\n## `metrics.parquet`: one row per figure\n### Conditions (factors)\n## Title\n```\n# not a heading\n```\n")
	for _, want := range []string{"title", "metricsparquet-one-row-per-figure", "conditions-factors", "title-1"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a line in a code block is not a heading")
	}
}
