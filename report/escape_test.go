package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/promoral/promoral/runfolder/manifest"
)

// Run data is text: a model, strategy, run or file name that looks like
// markup comes out escaped wherever the page shows it, and the page holds
// no element or attribute but the report's own.
func TestReportEscapesRunData(t *testing.T) {
	const (
		badModel    = `<script>alert(1)</script>`
		badStrategy = `"><img src=x onerror=alert(2)>`
		badRun      = `'><svg onload=alert(3)>`
		badConfig   = `configs/<iframe src=x>.yaml`
		badCell     = `"><img src=y onerror=alert(4)>`
	)
	oldM, oldS := models, strategies
	t.Cleanup(func() { models, strategies = oldM, oldS })
	models = []string{badModel, "beta"}
	strategies = []string{badStrategy, "self_correct"}
	dir := writeRun(t, all)

	var m manifest.Manifest
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m.Run, m.ConfigFile = badRun, badConfig
	m.Models[0].Name = badModel
	m.Strategies = strategies
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	csv := "<u>thing</u>,score\n\"" + strings.ReplaceAll(badCell, `"`, `""`) + "\",1\n"
	if err := os.WriteFile(filepath.Join(dir, "hostile.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	// The case with calls (calls.parquet names the model alpha).
	_, page, _ := generate(t, dir, Options{Case: caseID("alpha", "self_correct", "ethics", 0)})

	// Where run data shows, in its escaped form.
	eModel := "&lt;script&gt;alert(1)&lt;/script&gt;"
	eStrategy := "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;"
	eRun := "&#39;&gt;&lt;svg onload=alert(3)&gt;"
	for _, want := range []string{
		"<title>" + eRun + " · promoral report</title>",                     // the page's title
		"<h1>" + eRun + "</h1>",                                             // the header
		"<dd>configs/&lt;iframe src=x&gt;.yaml</dd>",                        // a header detail
		"<dd>" + eStrategy + ", self_correct</dd>",                          // the strategies
		`</i>` + eModel + `</span>`,                                         // the legend
		`</i>` + eModel + `</td>`,                                           // a table cell
		`<td>` + eStrategy + `</td>`,                                        // another
		`</i>` + eModel + ` ↑</th>`,                                         // a column head
		`">` + eModel + `</text>`,                                           // a figure's SVG text
		`data-view="model=%3Cscript%3Ealert%281%29%3C%2Fscript%3E`,          // an attribute
		`<td class="wide">&#34;&gt;&lt;img src=y onerror=alert(4)&gt;</td>`, // a CSV cell
		"&lt;u&gt;thing&lt;/u&gt;</th>",                                     // a CSV column
		`title="Sure &lt;script&gt;alert(1)&lt;/script&gt;"`,                // a title attribute
		"&lt;b&gt;I fed the dog&lt;/b&gt;",                                  // a transcript's message
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks the escaped %s", want)
		}
	}
	for _, raw := range []string{badModel, badStrategy, badRun, badCell, "<iframe", "<b>I fed", "<u>thing"} {
		if strings.Contains(page, raw) {
			t.Errorf("report.html holds %s unescaped", raw)
		}
	}

	// Every tag and attribute is one the report writes: escaping that
	// failed anywhere would add an img, a script or an on... handler.
	tags := []string{"a", "b", "body", "code", "dd", "details", "div", "dl", "dt", "figcaption", "figure", "footer",
		"g", "h1", "h2", "h3", "head", "header", "html", "i", "li", "main", "meta", "nav", "ol", "p", "path",
		"section", "span", "style", "summary", "svg", "table", "tbody", "td", "text", "th", "thead", "title", "tr", "ul"}
	attrs := []string{"aria-label", "charset", "class", "colspan", "content", "d", "data-view", "fill", "height", "href",
		"id", "lang", "name", "role", "style", "title", "transform", "viewBox", "width", "x", "xmlns", "xmlns:xlink", "y",
		"version", "stroke", "font-family", "font-size"}
	tagRE := regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9]*)((?:[^>"]|"[^"]*")*)>`)
	attrRE := regexp.MustCompile(`\s([^\s="]+)(?:="[^"]*")?`)
	seen := map[string]bool{}
	for _, tm := range tagRE.FindAllStringSubmatch(page, -1) {
		if !slices.Contains(tags, strings.ToLower(tm[1])) {
			seen["<"+tm[1]] = true
		}
		for _, am := range attrRE.FindAllStringSubmatch(tm[2], -1) {
			if a := am[1]; a != "/" && !slices.Contains(attrs, a) {
				seen[tm[1]+" "+a] = true
			}
		}
	}
	for x := range seen {
		t.Errorf("report.html has a tag or attribute the report does not write: %s", x)
	}
}
