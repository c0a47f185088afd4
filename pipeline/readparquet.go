package pipeline

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

// ReadParquet reads a whole Parquet file into rows keyed by column name.
// Nulls are nil; strings, int64, float64, bool and time values keep their
// types. It serves metrics, reports and tests; it is not a query engine.
func ReadParquet(path string) ([]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer tbl.Release()
	n := int(tbl.NumRows())
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = make(map[string]any, tbl.NumCols())
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		name := col.Name()
		off := 0
		for _, chunk := range col.Data().Chunks() {
			for i := 0; i < chunk.Len(); i++ {
				rows[off+i][name] = cellValue(chunk, i)
			}
			off += chunk.Len()
		}
	}
	return rows, nil
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
