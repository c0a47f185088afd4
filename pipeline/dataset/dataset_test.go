package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// The same three logical rows in every format; after types they must load
// identically.
const (
	rowsJSONL = `{"id": "a", "text": "first", "label": 1, "meta": {"lang": "en"}}
{"id": "b", "text": "second, with comma", "label": 0, "meta": {"lang": "fr"}}

{"id": "c", "text": "third \"quoted\"", "label": 1, "meta": {"lang": "en"}}
`
	rowsJSON = `[{"id": "a", "text": "first", "label": 1, "meta": {"lang": "en"}},
 {"id": "b", "text": "second, with comma", "label": 0, "meta": {"lang": "fr"}},
 {"id": "c", "text": "third \"quoted\"", "label": 1, "meta": {"lang": "en"}}]`
	rowsCSV = "id,text,label,meta.lang\na,first,1,en\nb,\"second, with comma\",0,fr\nc,\"third \"\"quoted\"\"\",1,en\n"
	rowsTSV = "id\ttext\tlabel\tmeta.lang\na\tfirst\t1\ten\nb\tsecond, with comma\t0\tfr\nc\tthird \"quoted\"\t1\ten\n"
)

func TestFormats(t *testing.T) {
	dir := t.TempDir()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "text", Type: arrow.BinaryTypes.String},
		{Name: "label", Type: arrow.PrimitiveTypes.Int64},
		{Name: "meta", Type: arrow.StructOf(arrow.Field{Name: "lang", Type: arrow.BinaryTypes.String})},
	}, nil)
	pq := parquetBytes(t, schema, rowsJSON)
	files := []struct {
		name    string
		content []byte
		format  string
	}{
		{"rows.jsonl", []byte(rowsJSONL), ""},
		{"rows.jsonl.gz", []byte(rowsJSONL), ""},
		{"rows.ndjson", []byte(rowsJSONL), ""},
		{"rows.json", []byte(rowsJSON), ""},
		{"rows.json.gz", []byte(rowsJSON), ""},
		{"rows.csv", []byte(rowsCSV), ""},
		{"rows.csv.gz", []byte(rowsCSV), ""},
		{"rows.tsv", []byte(rowsTSV), ""},
		{"rows.parquet", pq, ""},
		{"rows.parquet.gz", pq, ""},
		{"rows.data", []byte(rowsJSONL), "jsonl"}, // explicit format wins over the extension
		{"bom.csv", append([]byte("\xEF\xBB\xBF"), rowsCSV...), ""},
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			writeFile(t, dir, f.name, f.content)
			items := load(t, &Spec{
				Path:   f.name,
				Format: f.format,
				ID:     "id",
				Fields: map[string]string{"scenario": "text", "lang": "meta.lang"},
				Types:  map[string]string{"label": "int"},
			}, dir)
			if got, want := ids(items), []string{"a", "b", "c"}; !slices.Equal(got, want) {
				t.Fatalf("ids = %v, want %v", got, want)
			}
			want := []map[string]any{
				{"scenario": "first", "label": 1, "lang": "en"},
				{"scenario": "second, with comma", "label": 0, "lang": "fr"},
				{"scenario": `third "quoted"`, "label": 1, "lang": "en"},
			}
			for i, it := range items {
				for k, v := range want[i] {
					if it.Fields[k] != v {
						t.Errorf("item %s field %s = %#v, want %#v", it.ID, k, it.Fields[k], v)
					}
				}
			}
		})
	}
}

func TestRowNumbers(t *testing.T) {
	dir := t.TempDir()
	// Line 4 starts a record whose quoted field spans two lines, so the
	// next record starts on line 6: rows are where the record starts.
	writeFile(t, dir, "x.csv", []byte("a,b\n1,2\n3,4\n5,\"multi\nline\"\n7,8\n"))
	writeFile(t, dir, "x.jsonl", []byte("{\"a\":1}\n\n{\"a\":2}\n"))
	tests := []struct {
		file    string
		wantIDs []string
		rows    []int
	}{
		{"x.csv", []string{"x:2", "x:3", "x:4", "x:6"}, []int{2, 3, 4, 6}},
		{"x.jsonl", []string{"x:1", "x:3"}, []int{1, 3}},
	}
	for _, tc := range tests {
		items := load(t, &Spec{Path: tc.file}, dir)
		var rows []int
		for _, it := range items {
			rows = append(rows, it.Row)
		}
		if !slices.Equal(ids(items), tc.wantIDs) || !slices.Equal(rows, tc.rows) {
			t.Errorf("%s: ids %v rows %v, want %v %v", tc.file, ids(items), rows, tc.wantIDs, tc.rows)
		}
	}
}

func TestParquetTypes(t *testing.T) {
	dir := t.TempDir()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "options", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	}, nil)
	rows := `[{"id": 10, "ok": true, "score": 0.5, "options": ["x", "y"]},
	  {"id": 11, "ok": false, "score": null, "options": ["z"]},
	  {"id": 12, "ok": true, "score": 2, "options": []}]`
	writeFile(t, dir, "t.pq", parquetBytes(t, schema, rows))
	items := load(t, &Spec{Path: "t.pq", ID: "id", Filter: "ok"}, dir)
	if got := ids(items); !slices.Equal(got, []string{"10", "12"}) {
		t.Fatalf("ids = %v", got)
	}
	if items[0].Row != 1 || items[1].Row != 3 {
		t.Errorf("rows = %d, %d; want 1, 3", items[0].Row, items[1].Row)
	}
	f := items[0].Fields
	if f["id"] != 10 || f["score"] != 0.5 || !reflect.DeepEqual(f["options"], []any{"x", "y"}) {
		t.Errorf("fields = %#v", f)
	}
	// Whole floats become ints, like in JSON.
	if items[1].Fields["score"] != 2 {
		t.Errorf("score = %#v, want 2", items[1].Fields["score"])
	}
}

func TestMapping(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "m.jsonl", []byte(`{"a": "A", "b": "B", "v": {"death": "Yes"}, "opts": ["p", "q"], "dot.ted": 7, "n": "3", "f": "true"}`+"\n"))
	items := load(t, &Spec{Path: "m.jsonl", Fields: map[string]string{
		"a":      "b", // swap: both must read the source row
		"b":      "a",
		"death":  "v.death",
		"second": "opts.1",
		"dotted": "dot.ted", // an exact key with a dot wins over path splitting
	}, Types: map[string]string{"n": "int", "f": "bool", "dotted": "string"}}, dir)
	f := items[0].Fields
	want := map[string]any{"a": "B", "b": "A", "death": "Yes", "second": "q", "dotted": "7", "n": 3, "f": true}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %#v, want %#v", k, f[k], v)
		}
	}
	if _, kept := f["opts"]; !kept {
		t.Error("unmapped source column opts was dropped; all columns must be kept")
	}
}

func TestIDs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "r.jsonl.gz", []byte(`{"model": "m1", "strategy": "zs", "item": 0}
{"model": "m1", "strategy": "zs", "item": 1}
{"model": "m2", "strategy": "zs", "item": 0}
`))
	tests := []struct {
		spec Spec
		want []string
	}{
		{Spec{Path: "r.jsonl.gz", IDColumns: []string{"model", "strategy", "item"}}, []string{"m1:zs:0", "m1:zs:1", "m2:zs:0"}},
		{Spec{Path: "r.jsonl.gz"}, []string{"r:1", "r:2", "r:3"}}, // stem drops .jsonl.gz
	}
	for _, tc := range tests {
		if got := ids(load(t, &tc.spec, dir)); !slices.Equal(got, tc.want) {
			t.Errorf("ids = %v, want %v", got, tc.want)
		}
	}
	// Default ids do not move when a filter removes earlier rows.
	got := ids(load(t, &Spec{Path: "r.jsonl.gz", Filter: `model == "m2"`}, dir))
	if !slices.Equal(got, []string{"r:3"}) {
		t.Errorf("filtered default ids = %v, want [r:3]", got)
	}
}

func TestFilterSeesMixedRowShapes(t *testing.T) {
	dir := t.TempDir()
	// Like safety_prompts.jsonl: only JBB rows have pair_id.
	writeFile(t, dir, "s.jsonl", []byte(`{"id": "j1", "kind": "harmful", "source": "JBB", "pair_id": "p1"}
{"id": "x1", "kind": "benign", "source": "XSTest"}
{"id": "j2", "kind": "benign", "source": "JBB", "pair_id": "p1"}
`))
	spec := &Spec{Path: "s.jsonl", ID: "id", Fields: map[string]string{"pair": "pair_id"}, Filter: `source == "JBB"`}
	if got := ids(load(t, spec, dir)); !slices.Equal(got, []string{"j1", "j2"}) {
		t.Fatalf("ids = %v", got)
	}
	spec.Filter = ""
	_, err := Load(spec, dir)
	if err == nil || !strings.Contains(err.Error(), `row 2: field "pair" is missing (mapped from "pair_id")`) {
		t.Fatalf("without filter: err = %v, want missing pair at row 2", err)
	}
}

func TestLimitAndSample(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "{\"id\": \"r%03d\", \"even\": %t}\n", i, i%2 == 0)
	}
	writeFile(t, dir, "s.jsonl", []byte(b.String()))

	if got := ids(load(t, &Spec{Path: "s.jsonl", ID: "id", Limit: 3, Filter: "even"}, dir)); !slices.Equal(got, []string{"r000", "r002", "r004"}) {
		t.Errorf("limit after filter = %v", got)
	}
	if n := len(load(t, &Spec{Path: "s.jsonl", ID: "id", Limit: 1000}, dir)); n != 200 {
		t.Errorf("limit above row count kept %d rows, want all 200", n)
	}

	sample := func(n int, seed uint64, filter string) []string {
		return ids(load(t, &Spec{Path: "s.jsonl", ID: "id", Filter: filter, Sample: &Sample{N: n, Seed: seed}}, dir))
	}
	a, again := sample(20, 7, ""), sample(20, 7, "")
	if !slices.Equal(a, again) {
		t.Fatal("same seed gave different samples")
	}
	if len(a) != 20 || !slices.IsSorted(a) || len(slices.Compact(slices.Clone(a))) != 20 {
		t.Errorf("sample not 20 distinct ids in file order: %v", a)
	}
	if slices.Equal(a, sample(20, 8, "")) {
		t.Error("different seeds gave the same sample")
	}
	if first := ids(load(t, &Spec{Path: "s.jsonl", ID: "id", Limit: 20}, dir)); slices.Equal(a, first) {
		t.Error("sample equals the first 20 rows; it is not random")
	}
	// Keyed by id: the even rows of the full-file sample are all in a
	// sample of the even rows of the same size.
	evens := sample(20, 7, "even")
	for _, id := range a {
		var k int
		fmt.Sscanf(id, "r%d", &k)
		if k%2 == 0 && !slices.Contains(evens, id) {
			t.Errorf("%s is in the full sample and even, but not in the sample of even rows", id)
		}
	}
	if _, err := Load(&Spec{Path: "s.jsonl", ID: "id", Filter: "even", Sample: &Sample{N: 101}}, dir); err == nil ||
		!strings.Contains(err.Error(), "sample.n is 101 but only 100 rows remain") {
		t.Errorf("oversized sample: err = %v", err)
	}
}

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "c.jsonl", []byte(`{"id": "contrast_001", "original_scenario": "o1", "original_label_int": 0, "contrast_scenario": "c1", "contrast_label_int": 1, "edit_type": "flip"}
{"id": "contrast_002", "original_scenario": "o2", "original_label_int": 1, "contrast_scenario": "c2", "contrast_label_int": 1, "edit_type": "preserve"}
`))
	spec := &Spec{Path: "c.jsonl", ID: "id", Expand: &Expand{Link: "pair_id", Variants: []Variant{
		{Name: "original", Fields: map[string]string{"scenario": "original_scenario", "label_int": "original_label_int"}},
		{Name: "edited", Fields: map[string]string{"scenario": "contrast_scenario", "label_int": "contrast_label_int"}},
	}}}
	items := load(t, spec, dir)
	want := []struct {
		id, scenario, variant, pair, edit string
		label                             int
	}{
		{"contrast_001:original", "o1", "original", "contrast_001", "flip", 0},
		{"contrast_001:edited", "c1", "edited", "contrast_001", "flip", 1},
		{"contrast_002:original", "o2", "original", "contrast_002", "preserve", 1},
		{"contrast_002:edited", "c2", "edited", "contrast_002", "preserve", 1},
	}
	if len(items) != len(want) {
		t.Fatalf("got %d items, want %d", len(items), len(want))
	}
	for i, w := range want {
		f := items[i].Fields
		if items[i].ID != w.id || f["scenario"] != w.scenario || f["variant"] != w.variant ||
			f["pair_id"] != w.pair || f["edit_type"] != w.edit || f["label_int"] != w.label || items[i].Row != i/2+1 {
			t.Errorf("item %d = %s row %d %v, want %+v", i, items[i].ID, items[i].Row, f, w)
		}
	}
	// Limit counts rows, so pairs stay whole.
	spec.Limit = 1
	if got := ids(load(t, spec, dir)); !slices.Equal(got, []string{"contrast_001:original", "contrast_001:edited"}) {
		t.Errorf("limit 1 = %v", got)
	}
}

func TestExclude(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "pool.jsonl", []byte("{\"s\": \"a\"}\n{\"s\": \"b\"}\n{\"s\": \"c\"}\n"))
	writeFile(t, dir, "eval/test.csv", []byte("scenario\nb\nz\n"))
	items := load(t, &Spec{Path: "pool.jsonl", Exclude: &Exclude{Path: "eval/test.csv", Field: "s", Column: "scenario"}}, dir)
	if got := count(items, "s"); len(got) != 2 || got["b"] != 0 {
		t.Errorf("after exclude: %v, want a and c", got)
	}
}

func TestLongLine(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 3<<20) // larger than bufio.Scanner's default 64 KiB
	writeFile(t, dir, "l.jsonl", []byte(`{"t": "`+long+`"}`+"\n"))
	items := load(t, &Spec{Path: "l.jsonl"}, dir)
	if items[0].Fields["t"] != long {
		t.Error("long line was not read whole")
	}
}

// TestErrors checks that each bad input fails with a message naming the
// file, row and field and saying what to do.
func TestErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		data  string
		spec  Spec
		wants []string
	}{
		{"missing file", "", "", Spec{Path: "nope/x.jsonl"}, []string{"nope/x.jsonl: file not found (resolved to", "from base folder", "fix dataset.path"}},
		{"empty file", "e.jsonl", "", Spec{Path: "e.jsonl"}, []string{"e.jsonl: file is empty"}},
		{"blank lines only", "e.jsonl", "\n\n  \n", Spec{Path: "e.jsonl"}, []string{"e.jsonl: contains no rows"}},
		{"header only", "h.csv", "a,b\n", Spec{Path: "h.csv"}, []string{"has a header but no data rows"}},
		{"malformed json", "m.jsonl", "{\"a\": 1}\n{\"a\": \n", Spec{Path: "m.jsonl"}, []string{"m.jsonl: row 2: malformed JSON", "fix this line"}},
		{"trailing data", "m.jsonl", "{\"a\": 1} {\"a\": 2}\n", Spec{Path: "m.jsonl"}, []string{"row 1: malformed JSON: extra data"}},
		{"not an object", "m.jsonl", "{\"a\": 1}\n[1, 2]\n", Spec{Path: "m.jsonl"}, []string{"row 2: expected a JSON object, got a list"}},
		{"json not array", "m.json", "{\"a\": 1}", Spec{Path: "m.json"}, []string{"needs a top-level array"}},
		{"json bad element", "m.json", "[{\"a\": 1}, 3]", Spec{Path: "m.json"}, []string{"row 2: array element 2 is 3, not an object"}},
		{"json unclosed", "m.json", "[{\"a\": 1}", Spec{Path: "m.json"}, []string{"m.json: row 2: malformed JSON after array element 1"}},
		{"csv field count", "m.csv", "a,b\n1,2\n3\n", Spec{Path: "m.csv"}, []string{"m.csv: row 3: has a different number of fields"}},
		{"csv bad quote", "m.csv", "a,b\n1,x\"y\n", Spec{Path: "m.csv"}, []string{"m.csv: row 2: malformed CSV"}},
		{"csv dup header", "m.csv", "a,a\n1,2\n", Spec{Path: "m.csv"}, []string{"row 1: header names column \"a\" twice"}},
		{"not parquet", "m.parquet", "{\"a\": 1}\n", Spec{Path: "m.parquet"}, []string{"m.parquet: not a readable Parquet file"}},
		{"missing mapped field", "x.jsonl", "{\"input\": \"a\"}\n{\"inptu\": \"b\"}\n", Spec{Path: "x.jsonl", Fields: map[string]string{"scenario": "input"}},
			[]string{`x.jsonl: row 2: field "scenario" is missing (mapped from "input"); fix the row or change dataset.fields.scenario`}},
		{"duplicate id", "d.jsonl", "{\"id\": 1}\n{\"id\": 2}\n{\"id\": 1}\n", Spec{Path: "d.jsonl", ID: "id"}, []string{`d.jsonl: row 3: id "1" is also the id of row 1`}},
		{"missing id", "d.jsonl", "{\"id\": 1}\n{\"x\": 2}\n", Spec{Path: "d.jsonl", ID: "id"}, []string{`row 2: id column "id" is missing`}},
		{"empty id", "d.jsonl", "{\"id\": \"\"}\n", Spec{Path: "d.jsonl", ID: "id"}, []string{`row 1: id column "id" is ""`}},
		{"bad type", "t.csv", "n\n1\nx\n", Spec{Path: "t.csv", Types: map[string]string{"n": "int"}}, []string{`t.csv: row 3: field "n": cannot convert "x" to int`}},
		{"filter runtime", "f.jsonl", "{\"x\": 1}\n{\"x\": \"s\"}\n", Spec{Path: "f.jsonl", Filter: "x > 0"}, []string{"f.jsonl: row 2: filter `x > 0` failed"}},
		{"filter non-bool at runtime", "f.jsonl", "{\"x\": 1}\n", Spec{Path: "f.jsonl", Filter: "x"}, []string{"f.jsonl: row 1: filter `x` failed: invalid operation: bool(int)"}},
		{"filter keeps nothing", "f.jsonl", "{\"kind\": \"harmful\"}\n", Spec{Path: "f.jsonl", Filter: `kind == "Harmful"`}, []string{"filter `kind == \"Harmful\"` kept none of the 1 rows"}},
		{"filter does not compile", "f.jsonl", "{}\n", Spec{Path: "f.jsonl", Filter: "kind =="}, []string{"dataset.filter: expression `kind ==` does not compile"}},
		{"filter not bool", "f.jsonl", "{}\n", Spec{Path: "f.jsonl", Filter: "1 + 2"}, []string{"dataset.filter: expression `1 + 2`", "expected bool"}},
		{"unknown format", "f.xml", "<a/>", Spec{Path: "f.xml"}, []string{"dataset.format: cannot infer the format of \"f.xml\""}},
		{"variant column missing", "c.jsonl", "{\"a\": 1}\n", Spec{Path: "c.jsonl", Expand: &Expand{Variants: []Variant{{Name: "v", Fields: map[string]string{"s": "b"}}}}},
			[]string{`c.jsonl: row 1: field "s" of variant "v" is missing (mapped from "b")`}},
		{"gold not an option", "g.jsonl", "{\"a1\": \"x\", \"a2\": \"y\", \"g\": \"action3\"}\n",
			Spec{Path: "g.jsonl", Shuffle: &Shuffle{Options: []string{"a1", "a2"}, Into: []string{"o1", "o2"}, Gold: "g"}},
			[]string{`g.jsonl: row 1: item "g:1": gold field "g" is "action3", which is not one of the options`}},
		{"list not a list", "g.jsonl", "{\"opts\": \"x\"}\n", Spec{Path: "g.jsonl", Shuffle: &Shuffle{List: "opts"}},
			[]string{`field "opts" is "x"; shuffle.list needs a list`}},
		{"exclude file missing", "p.jsonl", "{\"s\": 1}\n", Spec{Path: "p.jsonl", Exclude: &Exclude{Path: "other.jsonl", Field: "s"}},
			[]string{"other.jsonl: file not found", "fix dataset.exclude.path"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				writeFile(t, dir, tc.file, []byte(tc.data))
			}
			_, err := Load(&tc.spec, dir)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n  does not contain %q", err, w)
				}
			}
		})
	}
}

func TestErrorType(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "x.jsonl", []byte("{\"a\": 1}\n{\"b\": 1}\n"))
	_, err := Load(&Spec{Path: "x.jsonl", Fields: map[string]string{"s": "a"}}, dir)
	var e *Error
	if !errors.As(err, &e) || e.Row != 2 || e.Field != "s" || e.Path != filepath.Join(dir, "x.jsonl") {
		t.Fatalf("err = %#v, want *Error at row 2 field s", err)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		fields []string // SpecError.Field of every expected error, in order
	}{
		{"valid", Spec{Path: "x.jsonl", ID: "id", Filter: `a == 1`, Sample: &Sample{N: 3}}, nil},
		{"no path", Spec{}, []string{"path"}},
		{"bad format", Spec{Path: "x.jsonl", Format: "xml"}, []string{"format"}},
		{"id and id_columns", Spec{Path: "x.jsonl", ID: "a", IDColumns: []string{"a", "a"}}, []string{"id_columns", "id_columns[1]"}},
		{"bad type", Spec{Path: "x.csv", Types: map[string]string{"n": "integer"}}, []string{"types.n"}},
		{"empty mapping", Spec{Path: "x.csv", Fields: map[string]string{"n": ""}}, []string{"fields.n"}},
		{"filter", Spec{Path: "x.csv", Filter: "a ==="}, []string{"filter"}},
		{"limit and sample", Spec{Path: "x.csv", Limit: -1, Sample: &Sample{}}, []string{"limit", "sample.n"}},
		{"exclude", Spec{Path: "x.csv", Exclude: &Exclude{Path: "y.bin"}}, []string{"exclude.field", "exclude.format"}},
		{"expand", Spec{Path: "x.csv", Expand: &Expand{As: "v", Link: "v", Variants: []Variant{{Name: "a"}, {Name: "a", Fields: map[string]string{"s": "t"}}}}},
			[]string{"expand.link", "expand.variants[0].fields", "expand.variants[1].name"}},
		{"expand empty", Spec{Path: "x.csv", Expand: &Expand{}}, []string{"expand.variants"}},
		{"shuffle neither", Spec{Path: "x.csv", Shuffle: &Shuffle{}}, []string{"shuffle.options"}},
		{"shuffle both", Spec{Path: "x.csv", Shuffle: &Shuffle{Options: []string{"a", "b"}, Into: []string{"x", "y"}, List: "l"}}, []string{"shuffle.list"}},
		{"shuffle into", Spec{Path: "x.csv", Shuffle: &Shuffle{Options: []string{"a", "b"}, Into: []string{"x"}, Parallel: []string{"p"}}}, []string{"shuffle.into", "shuffle.parallel"}},
		{"shuffle gold kind", Spec{Path: "x.csv", Shuffle: &Shuffle{List: "l", GoldKind: "name", Gold: "g"}}, []string{"shuffle.gold_kind"}},
		{"shuffle outputs", Spec{Path: "x.csv", Shuffle: &Shuffle{List: "l", GoldKind: "index", GoldInto: "o", OrderInto: "o"}}, []string{"shuffle.gold", "shuffle.order_into"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range tc.spec.Check() {
				var se *SpecError
				if !errors.As(err, &se) {
					t.Fatalf("%v is not a *SpecError", err)
				}
				if !strings.HasPrefix(err.Error(), "dataset."+se.Field+": ") {
					t.Errorf("message %q does not start with its field", err)
				}
				got = append(got, se.Field)
			}
			if !slices.Equal(got, tc.fields) {
				t.Errorf("error fields = %v, want %v\nerrors: %v", got, tc.fields, tc.spec.Check())
			}
		})
	}
}

// TestSpecTags guards the contract with the config loader: every YAML
// field of the spec types has a yaml name and a doc string.
func TestSpecTags(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || seen[rt] {
			return
		}
		seen[rt] = true
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.Tag.Get("yaml") == "-" {
				continue // set by the caller, not written in YAML (Spec.Files)
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || opts != "omitempty" {
				t.Errorf("%s.%s: yaml tag %q, want \"name,omitempty\"", rt.Name(), f.Name, f.Tag.Get("yaml"))
			}
			if f.Tag.Get("doc") == "" {
				t.Errorf("%s.%s has no doc tag", rt.Name(), f.Name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Spec{}))
	if len(seen) != 8 {
		t.Errorf("walked %d struct types, want 8 (Spec, Hub, Exclude, Sample, Expand, Variant, Shuffle, Match)", len(seen))
	}
}

func TestLoadDoesNotNeedWritableFiles(t *testing.T) {
	// The shipped data may be read-only (it is in /work/shared): Load must
	// only read.
	dir := t.TempDir()
	p := writeFile(t, dir, "ro.jsonl", []byte("{\"a\": 1}\n"))
	if err := os.Chmod(p, 0o444); err != nil {
		t.Fatal(err)
	}
	load(t, &Spec{Path: "ro.jsonl"}, dir)
}
