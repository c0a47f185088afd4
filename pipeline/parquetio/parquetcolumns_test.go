package parquetio

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Row groups written a column at a time are byte for byte the file that
// pqarrow's Write makes of the same rows, one record a row group: text wide
// enough for pages to split, dictionary columns, nulls, every column type,
// row groups ended by rows and by bytes.
func TestParquetColumnAtATimeWritesWritesBytes(t *testing.T) {
	cols := []Column{{"id", ColString, false}, {"model", ColString, true}, {"reply", ColString, false},
		{"n", ColInt, false}, {"f", ColFloat, false}, {"ok", ColBool, false}, {"t", ColTime, false}, {"last", ColString, false}}
	r := rand.New(rand.NewPCG(7, 8))
	var rows [][]any
	for i := 0; i < 2*RowBatch+300; i++ {
		reply := any(strings.Repeat(fmt.Sprintf("word%d ", r.IntN(50)), r.IntN(120)))
		if i%11 == 0 {
			reply = nil
		}
		if i%3000 == 7 {
			reply = strings.Repeat("a much longer reply ", (3<<20)/20) // ends a row group by its bytes
		}
		rows = append(rows, []any{fmt.Sprint("case/", i), fmt.Sprint("m", i%4), reply, int64(i), float64(i) / 7,
			i%2 == 0, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * time.Millisecond), fmt.Sprint("tail", r.IntN(1000))})
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "a.parquet")
	w, err := Create(path, cols)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if err := w.Append(row...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	groups := rowGroupSizes(t, path)
	if len(groups) < 4 {
		t.Fatalf("%d row groups: the rows should end several by rows and by bytes", len(groups))
	}
	want := writeWithRecords(t, filepath.Join(dir, "b.parquet"), cols, rows, groups)
	if !bytes.Equal(got, want) {
		t.Fatalf("column at a time: %d bytes; pqarrow's Write of the same row groups: %d bytes, not the same", len(got), len(want))
	}
}

// rowGroupSizes are the rows of each row group of a Parquet file.
func rowGroupSizes(t *testing.T, path string) []int {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	var n []int
	for g := 0; g < rdr.NumRowGroups(); g++ {
		n = append(n, int(rdr.MetaData().RowGroup(g).NumRows()))
	}
	return n
}

// writeWithRecords writes rows as Create's writer is set up, one
// pqarrow Write of a whole record per row group, and returns the file.
func writeWithRecords(t *testing.T, path string, cols []Column, rows [][]any, groups []int) []byte {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	opts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false), parquet.WithCompressionLevel(1)}
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.Name, Type: c.arrowType(), Nullable: true}
		if c.Dict {
			opts = append(opts, parquet.WithDictionaryFor(c.Name, true))
		}
	}
	schema := arrow.NewSchema(fields, nil)
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, nopCloser{&buf}, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	at := 0
	for _, n := range groups {
		for _, row := range rows[at : at+n] {
			for i, v := range row {
				switch x := v.(type) {
				case nil:
					rb.Field(i).AppendNull()
				case string:
					rb.Field(i).(*array.StringBuilder).Append(x)
				case int64:
					rb.Field(i).(*array.Int64Builder).Append(x)
				case float64:
					rb.Field(i).(*array.Float64Builder).Append(x)
				case bool:
					rb.Field(i).(*array.BooleanBuilder).Append(x)
				case time.Time:
					ts, _ := arrow.TimestampFromTime(x, arrow.Millisecond)
					rb.Field(i).(*array.TimestampBuilder).Append(ts)
				default:
					t.Fatalf("value %T", v)
				}
			}
		}
		at += n
		rec := rb.NewRecordBatch()
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }
