package runfolder

import (
	"github.com/promoral/promoral/pipeline/parquetio"
)

// Col declares one column of an output file, once: its name, its Parquet
// type, whether its values are dictionary-encoded (few distinct values),
// what it holds (docs/outputs.md is generated from Doc) and how a row of R
// gives its value (nil: null). A writer appends Schema.Append's values; no
// list of values is kept in step with a list of names by hand.
type Col[R any] struct {
	Name string
	Type parquetio.ColType
	Dict bool
	Doc  string
	Get  func(*R) any
}

// Schema is a file's columns in file order.
type Schema[R any] []Col[R]

// Columns are the schema's Parquet columns.
func (s Schema[R]) Columns() []parquetio.Column {
	out := make([]parquetio.Column, len(s))
	for i, c := range s {
		out[i] = parquetio.Column{Name: c.Name, Type: c.Type, Dict: c.Dict}
	}
	return out
}

// Append appends r's values, in the schema's order, to dst.
func (s Schema[R]) Append(dst []any, r *R) []any {
	for i := range s {
		dst = append(dst, s[i].Get(r))
	}
	return dst
}

// Family documents columns a study declares (one per factor, per
// declared output, ...): they follow a schema's own columns.
type Family struct {
	Name, Type, Doc string
}

// nonEmpty is s, or null for "".
func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
