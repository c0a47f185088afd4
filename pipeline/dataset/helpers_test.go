package dataset

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeFile writes content to dir/name, gzipping it when name ends in .gz.
func writeFile(t testing.TB, dir, name string, content []byte) string {
	t.Helper()
	if strings.HasSuffix(name, ".gz") {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(content); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		content = b.Bytes()
	}
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// parquetBytes builds a Parquet file from a JSON array of objects with the
// given schema, using arrow-go's writer (the same library the loader reads
// with, but a different code path: JSON -> Arrow -> Parquet).
func parquetBytes(t testing.TB, schema *arrow.Schema, jsonRows string) []byte {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(jsonRows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var b bytes.Buffer
	// A tiny row-group size forces several row groups and record batches,
	// so row numbering across batches is exercised.
	if err := pqarrow.WriteTable(tbl, &b, 2, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// load is Load with a fatal on error.
func load(t testing.TB, spec *Spec, dir string) []Item {
	t.Helper()
	items, err := Load(spec, dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return items
}

func ids(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func count(items []Item, field string) map[any]int {
	m := map[any]int{}
	for _, it := range items {
		m[it.Fields[field]]++
	}
	return m
}
