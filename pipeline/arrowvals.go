package pipeline

import (
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// One value of a column read back from a Parquet file; ok is false when
// it is null or of another type.

func str(a arrow.Array, i int) (string, bool) {
	if a.IsNull(i) {
		return "", false
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i), true
	case *array.Dictionary:
		return str(x.Dictionary(), x.GetValueIndex(i))
	}
	return "", false
}

func flt(a arrow.Array, i int) (float64, bool) {
	if x, ok := a.(*array.Float64); ok && !a.IsNull(i) {
		return x.Value(i), true
	}
	return 0, false
}

func integer(a arrow.Array, i int) (int64, bool) {
	if x, ok := a.(*array.Int64); ok && !a.IsNull(i) {
		return x.Value(i), true
	}
	return 0, false
}

func boolean(a arrow.Array, i int) (bool, bool) {
	if x, ok := a.(*array.Boolean); ok && !a.IsNull(i) {
		return x.Value(i), true
	}
	return false, false
}

// sortedKeys are a set's members, sorted.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// boolSet is the set of a map's keys.
func boolSet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
