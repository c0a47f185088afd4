package yamlstrict_test

import (
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// yaml.v3 reports a parser error at the start of the enclosing block, 0-based:
// a bad line 5 in a list that opens on line 3 reads "line 2". The diagnostic
// must name the line at fault and quote it.
func TestYAMLSyntaxErrorsPointAtTheFaultyLine(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		quote     string
		hint      string
	}{
		{"key inside a list", "name: x\nmodels:\n  - a\n  - b\n  bad: 1\nstrategies: [zero_shot]\n", 5, "  bad: 1", "'-'"},
		{"mis-indented field of a list item", "name: x\nmodels:\n  - name: a\n    provider: openai\n   model: gpt\ntasks: [t]\n", 5, "   model: gpt", "'-'"},
		{"unclosed flow list", "name: x\nmodels:\n  - a\n  - b\ntasks: [ethics\nstrategies: [zero_shot]\n", 5, "tasks: [ethics", "not closed"},
		{"unclosed flow mapping", "name: x\nstrategies:\n  - zero_shot\n  - {use: reflection_l2, name: r\n  - few_shot\nmatrix: {}\n", 4, "{use: reflection_l2", "not closed"},
		{"unclosed quote", "name: x\nsettings:\n  concurrency: 8\n  seed: \"1\n  fsync: true\n", 4, `seed: \"1`, "never closed"},
		{"over-indented key", "name: x\nsettings:\n  concurrency: 8\n  seed: 1\n   fsync: true\n", 5, "fsync: true", "plain value"},
		{"tab", "name: x\nsettings:\n  concurrency: 8\n\tseed: 1\n", 4, "seed: 1", "tabs"},
		{"text after a block scalar", "name: x\nd: |\n  abc\n  def\n x: 1\n", 5, " x: 1", "line up"},
		// A flow mapping spread over lines is fine until the real fault.
		{"multi-line flow then a fault", "m: {a: 1,\n  b: 2}\nlist:\n  - a\n  oops: 1\n", 5, "oops: 1", "'-'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ds yamlstrict.Diags
			if n := yamlstrict.ParseYAML("c.yaml", []byte(tc.src), &ds); n != nil || len(ds) != 1 {
				t.Fatalf("want one diagnostic, got %v", ds)
			}
			d := ds[0]
			if d.Line != tc.line {
				t.Errorf("line %d, want %d: %v", d.Line, tc.line, d)
			}
			if !strings.Contains(d.Error(), tc.quote) {
				t.Errorf("%q does not quote the line (%q)", d.Error(), tc.quote)
			}
			if !strings.Contains(d.Hint, tc.hint) {
				t.Errorf("hint %q lacks %q", d.Hint, tc.hint)
			}
		})
	}
}

// A well-formed file gives no diagnostic, and the empty file says so.
func TestParseYAMLWellFormedAndEmpty(t *testing.T) {
	var ds yamlstrict.Diags
	if n := yamlstrict.ParseYAML("c.yaml", []byte("a: {b: 1,\n  c: 2}\n"), &ds); n == nil || len(ds) != 0 {
		t.Fatalf("well-formed file: %v", ds)
	}
	if n := yamlstrict.ParseYAML("c.yaml", []byte("# only a comment\n"), &ds); n != nil || len(ds) != 1 || !strings.Contains(ds[0].Msg, "empty") {
		t.Fatalf("empty file: %v", ds)
	}
}
