package runfolder

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/runfolder/casetrace"
	"github.com/promoral/promoral/runfolder/manifest"
)

// format1 is a run folder written before manifest.json carried
// format_version (format 1): a scripted model, a one-shot and a looping
// strategy over six items, with a classification block.
const format1 = "testdata/format1"

// columnNames are a Parquet file's columns in file order.
func columnNames(t *testing.T, path string) []string {
	t.Helper()
	f, rdr, fr, err := parquetio.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer rdr.Close()
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fl := range sc.Fields() {
		out = append(out, fl.Name)
	}
	return out
}

func TestReadsFormat1(t *testing.T) {
	m, err := manifest.Read(format1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != 1 || m.Run != "toy-run" || m.Cases != 12 || len(m.Models) != 1 || m.Models[0].Provider != "scripted" {
		t.Errorf("manifest: format %d, run %q, %d cases, models %+v", m.Format, m.Run, m.Cases, m.Models)
	}
	if len(m.Metrics) != 1 || m.Metrics[0].Errors != manifest.ErrorsIncomplete {
		t.Errorf("metric blocks: %+v", m.Metrics)
	}
	if p := manifest.AnswerPolicyOf(format1, "toy"); p.Unparsed() != "wrong" || p.Errors() != manifest.ErrorsIncomplete {
		t.Errorf("answer policy: unparsed %q, errors %q", p.Unparsed(), p.Errors())
	}

	// The files have today's own columns, in today's order; results then
	// has its flat columns.
	res := columnNames(t, filepath.Join(format1, "results.parquet"))
	if own := ResultSchema.Names(); len(res) < len(own) || !slices.Equal(res[:len(own)], own) {
		t.Errorf("results.parquet columns %v, want %v first", res, own)
	}
	if got, want := columnNames(t, filepath.Join(format1, "calls.parquet")), CallSchema.Names(); !slices.Equal(got, want) {
		t.Errorf("calls.parquet columns %v, want %v", got, want)
	}
	var metricNames []string
	for _, c := range MetricColumns(m.Factors) {
		metricNames = append(metricNames, c.Name)
	}
	if got := columnNames(t, filepath.Join(format1, "metrics.parquet")); !slices.Equal(got, metricNames) {
		t.Errorf("metrics.parquet columns %v, want %v", got, metricNames)
	}

	// Every row's trace decodes; the looping strategy's trace has its
	// kinds and where the branch went.
	rows, err := parquetio.Read(filepath.Join(format1, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != m.Cases {
		t.Fatalf("%d results rows, manifest says %d cases", len(rows), m.Cases)
	}
	branched := 0
	for _, r := range rows {
		s, _ := r["trace"].(string)
		steps, err := casetrace.Read(s)
		if err != nil || len(steps) == 0 {
			t.Fatalf("case %v: trace %q: %v", r["case_id"], s, err)
		}
		for _, st := range steps {
			if st.Kind == "branch" && st.Next != "" {
				branched++
			}
		}
	}
	if branched == 0 {
		t.Error("no trace step records a branch's choice")
	}

	// The journal's lines decode as records, with their replies.
	f, err := os.Open(filepath.Join(format1, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	replies := 0
	for sc.Scan() {
		var rec JournalRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		if rec.Resp != nil && rec.Resp.Text() != "" {
			replies++
		}
	}
	if replies != m.CallsNew {
		t.Errorf("%d replies in the journal, manifest says %d new calls", replies, m.CallsNew)
	}
}

// A folder of a later format is refused, naming both versions.
func TestRefusesLaterFormat(t *testing.T) {
	dir := t.TempDir()
	data := []byte(`{"run": "x", "format_version": 99, "version": "9.0.0"}`)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := manifest.Read(dir)
	if err == nil {
		t.Fatal("a format 99 manifest was read")
	}
	for _, part := range []string{"manifest.json", "format_version 99", "format 2", "9.0.0"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
}

// A folder written today carries the format version.
func TestManifestCarriesFormat(t *testing.T) {
	b, err := json.Marshal(manifest.Manifest{Format: manifest.FormatVersion})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"format_version":2`) {
		t.Errorf("manifest JSON %s has no format_version 2", b)
	}
}

// Names are the schema's column names.
func (s Schema[R]) Names() []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.Name
	}
	return out
}
