package parquetio

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// One value of a column read back from a Parquet file, at row i; ok is
// false when it is null or of another type.

// StringAt reads a string column, plain or dictionary-encoded.
func StringAt(a arrow.Array, i int) (string, bool) {
	if a.IsNull(i) {
		return "", false
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i), true
	case *array.Dictionary:
		return StringAt(x.Dictionary(), x.GetValueIndex(i))
	}
	return "", false
}

// FloatAt reads a float64 column.
func FloatAt(a arrow.Array, i int) (float64, bool) {
	if x, ok := a.(*array.Float64); ok && !a.IsNull(i) {
		return x.Value(i), true
	}
	return 0, false
}

// IntAt reads an int64 column.
func IntAt(a arrow.Array, i int) (int64, bool) {
	if x, ok := a.(*array.Int64); ok && !a.IsNull(i) {
		return x.Value(i), true
	}
	return 0, false
}

// BoolAt reads a boolean column.
func BoolAt(a arrow.Array, i int) (bool, bool) {
	if x, ok := a.(*array.Boolean); ok && !a.IsNull(i) {
		return x.Value(i), true
	}
	return false, false
}
