package parquetio

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Read reads a whole Parquet file into rows keyed by column name.
// Nulls are nil; strings, int64, float64, bool and time values keep their
// types. It serves metrics, reports and tests; it is not a query engine.
func Read(path string) ([]map[string]any, error) {
	var rows []map[string]any
	err := Scan(path, nil, nil, func(r map[string]any) { rows = append(rows, r) })
	return rows, err
}

func Open(path string) (*os.File, *file.Reader, *pqarrow.FileReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		rdr.Close()
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, rdr, fr, nil
}

// Scan calls fn for every row of the named columns (nil: all; names
// the file lacks are skipped) in the given row groups (nil: all), in file
// order.
func Scan(path string, cols []string, groups []int, fn func(map[string]any)) error {
	_, rdr, fr, err := Open(path)
	if err != nil {
		return err
	}
	defer rdr.Close()
	var idx []int
	if cols == nil {
		for i := 0; i < rdr.MetaData().Schema.NumColumns(); i++ {
			idx = append(idx, i)
		}
	}
	for _, c := range cols {
		if i := rdr.MetaData().Schema.ColumnIndexByName(c); i >= 0 {
			idx = append(idx, i)
		}
	}
	if groups == nil {
		for g := 0; g < rdr.NumRowGroups(); g++ {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 || len(idx) == 0 {
		return nil
	}
	// One row group at a time, so memory is bounded by a group.
	for _, g := range groups {
		tbl, err := fr.ReadRowGroups(context.Background(), idx, []int{g})
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rows := make([]map[string]any, int(tbl.NumRows()))
		for i := range rows {
			rows[i] = make(map[string]any, len(idx))
		}
		for c := 0; c < int(tbl.NumCols()); c++ {
			col := tbl.Column(c)
			off := 0
			for _, chunk := range col.Data().Chunks() {
				for i := 0; i < chunk.Len(); i++ {
					rows[off+i][col.Name()] = cellValue(chunk, i)
				}
				off += chunk.Len()
			}
		}
		tbl.Release()
		for _, row := range rows {
			fn(row)
		}
	}
	return nil
}

// RowGroups lists the row groups in which some value of a column
// satisfies match, reading only that column, so a caller can then scan just
// those groups of a large file.
func RowGroups(path, column string, match func(any) bool) ([]int, error) {
	_, rdr, fr, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	idx := rdr.MetaData().Schema.ColumnIndexByName(column)
	if idx < 0 {
		return nil, fmt.Errorf("%s has no %s column", path, column)
	}
	var groups []int
	for g := 0; g < rdr.NumRowGroups(); g++ {
		tbl, err := fr.ReadRowGroups(context.Background(), []int{idx}, []int{g})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		hit := false
		for _, chunk := range tbl.Column(0).Data().Chunks() {
			for i := 0; i < chunk.Len() && !hit; i++ {
				hit = match(cellValue(chunk, i))
			}
		}
		tbl.Release()
		if hit {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

func cellValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i)
	case *array.LargeString:
		return x.Value(i)
	case *array.Int64:
		return x.Value(i)
	case *array.Int32:
		return int64(x.Value(i))
	case *array.Float64:
		return x.Value(i)
	case *array.Boolean:
		return x.Value(i)
	case *array.Timestamp:
		return x.Value(i).ToTime(arrow.Millisecond)
	case *array.Dictionary:
		return cellValue(x.Dictionary(), x.GetValueIndex(i))
	}
	return a.ValueStr(i)
}

// recordReader is what pqarrow's record reader offers and prefetch wraps.
type RecordReader interface {
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
	Release()
}

// prefetched reads a file's next batch while the caller works on the one it
// has, so a copy's reading and writing share the machine's cores.
type prefetched struct {
	src  RecordReader
	ch   chan arrow.RecordBatch
	stop chan struct{}
	done chan struct{}
	cur  arrow.RecordBatch
	err  error // set before ch is closed
}

func Prefetch(src RecordReader) *prefetched {
	p := &prefetched{src: src, ch: make(chan arrow.RecordBatch, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer close(p.ch)
		for src.Next() {
			rec := src.RecordBatch()
			rec.Retain() // the reader lets go of it on its next batch
			select {
			case p.ch <- rec:
			case <-p.stop:
				rec.Release()
				return
			}
		}
		p.err = src.Err()
	}()
	return p
}

func (p *prefetched) Next() bool {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	rec, ok := <-p.ch
	if !ok {
		return false
	}
	p.cur = rec
	return true
}

func (p *prefetched) RecordBatch() arrow.RecordBatch { return p.cur }

// Err is the reader's error once Next has returned false.
func (p *prefetched) Err() error { return p.err }

func (p *prefetched) Release() {
	close(p.stop)
	for rec := range p.ch {
		rec.Release()
	}
	<-p.done
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	p.src.Release()
}
