package dataset

import (
	"strings"
	"testing"
)

// withoutFormat runs f as in a program that did not link the format in.
func withoutFormat(t *testing.T, name string, f func()) {
	formatsMu.Lock()
	saved, had := formats[name]
	delete(formats, name)
	formatsMu.Unlock()
	defer func() {
		formatsMu.Lock()
		if had {
			formats[name] = saved
		}
		formatsMu.Unlock()
	}()
	f()
}

// A program without the Parquet format gets an error naming the file and
// the package to link, never an empty dataset.
func TestParquetNotLinked(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "rows.parquet", []byte("PAR1 whatever PAR1"))
	writeFile(t, dir, "rows.jsonl", []byte("{\"a\": 1}\n"))
	withoutFormat(t, "parquet", func() {
		items, err := Load(&Spec{Path: "rows.parquet"}, dir)
		if err == nil {
			t.Fatalf("Load read %d items without a Parquet reader", len(items))
		}
		for _, w := range []string{"rows.parquet: Parquet support is not linked into this program", "pipeline/dataset/parquetfmt"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q\n  does not contain %q", err, w)
			}
		}
		err = ScanFile(dir+"/results.parquet", "parquet", nil, func(map[string]any) {})
		if err == nil || !strings.Contains(err.Error(), "results.parquet: Parquet support is not linked") {
			t.Errorf("ScanFile without a Parquet reader: %v", err)
		}
		// The formats dataset reads itself do not need it.
		if _, err := Load(&Spec{Path: "rows.jsonl"}, dir); err != nil {
			t.Errorf("jsonl without a Parquet reader: %v", err)
		}
	})
	if _, ok := linkedFormat("parquet"); !ok {
		t.Fatal("the package's tests run without the Parquet format; parquet_link_test.go links it in")
	}
}
