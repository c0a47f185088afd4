//go:build !js

package view

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// pqFile reads a Parquet file one row group at a time, only the columns
// asked for, so memory follows one row group, not the file. It is not safe
// for concurrent use: each reader opens its own.
type pqFile struct {
	path  string
	f     *os.File
	rdr   *file.Reader
	fr    *pqarrow.FileReader
	start []int // first row of each row group, plus the row count at the end
}

func openPQ(path string) (*pqFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is not a readable Parquet file: %w", path, err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16, Parallel: true}, memory.DefaultAllocator)
	if err != nil {
		rdr.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := &pqFile{path: path, f: f, rdr: rdr, fr: fr}
	n := 0
	for g := 0; g < rdr.NumRowGroups(); g++ {
		p.start = append(p.start, n)
		n += int(rdr.MetaData().RowGroup(g).NumRows())
	}
	p.start = append(p.start, n)
	return p, nil
}

func (p *pqFile) Close() { p.rdr.Close() }

// columns names every column of the file.
func (p *pqFile) columns() []string {
	var out []string
	names := p.rdr.MetaData().Schema
	for c := 0; c < names.NumColumns(); c++ {
		out = append(out, names.Column(c).Name())
	}
	return out
}

func (p *pqFile) groups() int { return len(p.start) - 1 }
func (p *pqFile) rows() int   { return p.start[len(p.start)-1] }

func (p *pqFile) has(col string) bool {
	return p.rdr.MetaData().Schema.ColumnIndexByName(col) >= 0
}

// groupOf is the row group holding row i.
func (p *pqFile) groupOf(i int) int {
	lo, hi := 0, p.groups()-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if p.start[mid] <= i {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// batch is the columns of one row group; absent columns read as nulls.
type batch struct {
	n    int
	cols map[string]arrow.Array
	keep []arrow.Array
}

func (b *batch) release() {
	for _, a := range b.keep {
		a.Release()
	}
}

// read loads the named columns of row group g.
func (p *pqFile) read(g int, cols ...string) (*batch, error) {
	var idx []int
	var names []string
	for _, c := range cols {
		if i := p.rdr.MetaData().Schema.ColumnIndexByName(c); i >= 0 {
			idx = append(idx, i)
			names = append(names, c)
		}
	}
	b := &batch{n: p.start[g+1] - p.start[g], cols: map[string]arrow.Array{}}
	if len(idx) == 0 {
		return b, nil
	}
	tbl, err := p.fr.ReadRowGroups(context.Background(), idx, []int{g})
	if err != nil {
		return nil, fmt.Errorf("%s: row group %d: %w", p.path, g, err)
	}
	defer tbl.Release()
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		chunks := col.Data().Chunks()
		var a arrow.Array
		if len(chunks) == 1 {
			a = chunks[0]
			a.Retain()
		} else {
			a, err = array.Concatenate(chunks, memory.DefaultAllocator)
			if err != nil {
				b.release()
				return nil, err
			}
		}
		b.cols[col.Name()] = a
		b.keep = append(b.keep, a)
	}
	return b, nil
}

// str returns the string at row i of column c; ok is false for a null or
// an absent column. The string is copied: arrow's buffers are released
// with the batch.
func (b *batch) str(c string, i int) (string, bool) {
	s, ok := b.strRef(c, i)
	if !ok {
		return "", false
	}
	return strings.Clone(s), true
}

// strRef is str without the copy, for values used before release.
func (b *batch) strRef(c string, i int) (string, bool) {
	a := b.cols[c]
	if a == nil || a.IsNull(i) {
		return "", false
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i), true
	case *array.LargeString:
		return x.Value(i), true
	case *array.Binary:
		return string(x.Value(i)), true
	case *array.Dictionary:
		d := x.Dictionary()
		j := x.GetValueIndex(i)
		switch y := d.(type) {
		case *array.String:
			return y.Value(j), true
		case *array.LargeString:
			return y.Value(j), true
		}
	}
	return a.ValueStr(i), true
}

// tri is a nullable bool: -1 null, 0 false, 1 true.
func (b *batch) tri(c string, i int) int8 {
	a, ok := b.cols[c].(*array.Boolean)
	if !ok || a.IsNull(i) {
		return -1
	}
	if a.Value(i) {
		return 1
	}
	return 0
}

func (b *batch) float(c string, i int) (float64, bool) {
	switch a := b.cols[c].(type) {
	case *array.Float64:
		if !a.IsNull(i) {
			return a.Value(i), true
		}
	case *array.Float32:
		if !a.IsNull(i) {
			return float64(a.Value(i)), true
		}
	case *array.Int64:
		if !a.IsNull(i) {
			return float64(a.Value(i)), true
		}
	}
	return 0, false
}

func (b *batch) int(c string, i int) (int64, bool) {
	switch a := b.cols[c].(type) {
	case *array.Int64:
		if !a.IsNull(i) {
			return a.Value(i), true
		}
	case *array.Int32:
		if !a.IsNull(i) {
			return int64(a.Value(i)), true
		}
	case *array.Float64:
		if !a.IsNull(i) {
			return int64(a.Value(i)), true
		}
	}
	return 0, false
}

// value is the cell as a JSON-friendly value (nil for null).
func (b *batch) value(c string, i int) any {
	a := b.cols[c]
	if a == nil || a.IsNull(i) {
		return nil
	}
	switch x := a.(type) {
	case *array.Boolean:
		return x.Value(i)
	case *array.Int64:
		return x.Value(i)
	case *array.Int32:
		return int64(x.Value(i))
	case *array.Float64:
		return jsonFloat(x.Value(i))
	case *array.Timestamp:
		unit := arrow.Millisecond
		if tt, ok := x.DataType().(*arrow.TimestampType); ok {
			unit = tt.Unit
		}
		return x.Value(i).ToTime(unit).UTC()
	}
	s, _ := b.str(c, i)
	return s
}
