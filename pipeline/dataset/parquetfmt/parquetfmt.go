// Package parquetfmt links Parquet into package dataset: datasets in
// Parquet (format: parquet, .parquet/.pq, gzipped or not) and
// dataset.ScanFile of run folders' results.parquet. It keeps Apache Arrow
// out of dataset and of the packages that import only dataset's types.
// A program that loads studies imports it for its side effect:
//
//	import _ "github.com/promoral/promoral/pipeline/dataset/parquetfmt"
package parquetfmt

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/parquetio"
)

func init() {
	dataset.RegisterFormat("parquet", dataset.FileFormat{
		Read: read,
		Scan: func(path string, cols []string, fn func(map[string]any)) error {
			return parquetio.Scan(path, cols, nil, fn)
		},
	})
}

// source names the file being read, for error messages.
type source struct{ path string }

func (s source) errf(row int, format string, args ...any) *dataset.Error {
	return &dataset.Error{Path: s.path, Row: row, Msg: fmt.Sprintf(format, args...)}
}

// read converts each record batch to JSON objects via arrow's own JSON
// rendering, so nested lists and structs come out exactly like the JSON
// formats (one value model for every format).
func read(path string, ra dataset.ReaderAtSeeker, fn func(row int, rec map[string]any) error) (int, error) {
	s := source{path}
	var rr pqarrow.RecordReader
	err := s.guard(func() error {
		pr, err := file.NewParquetReader(ra)
		if err != nil {
			return s.errf(0, "not a readable Parquet file: %v; check dataset.format", err)
		}
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
		if err != nil {
			return s.errf(0, "unsupported Parquet schema: %v", err)
		}
		rr, err = fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			return s.errf(0, "cannot read Parquet rows: %v", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	var buf bytes.Buffer
	n := 0
	for {
		more := false
		err := s.guard(func() error {
			if !rr.Next() {
				if err := rr.Err(); err != nil && err != io.EOF {
					return s.errf(n+1, "cannot read Parquet rows: %v", err)
				}
				return nil
			}
			more = true
			buf.Reset()
			if err := array.RecordToJSON(rr.RecordBatch(), &buf); err != nil {
				return s.errf(n+1, "cannot convert Parquet rows: %v", err)
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		if !more {
			break
		}
		for line := range bytes.Lines(buf.Bytes()) {
			rec, err := dataset.DecodeRow(line)
			if err != nil {
				return n, s.errf(n+1, "cannot convert Parquet row: %v", err)
			}
			n++
			if err := fn(n, rec); err != nil {
				return n, err
			}
		}
	}
	if n == 0 {
		return 0, s.errf(0, "contains no rows")
	}
	return n, nil
}

// guard turns a panic inside arrow-go (it panics on some corrupt files) into
// an error; the row handling runs outside it so real bugs still crash.
func (s source) guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.errf(0, "corrupt Parquet file: %v", r)
		}
	}()
	return f()
}
