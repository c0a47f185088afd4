package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// kinds is a set of the kinds of values a flat column has held.
type kinds uint8

const (
	kBool kinds = 1 << iota
	kInt
	kDouble
	kString
	kJSON // a list or an object
)

// kindOf is a value's kind as the JSON columns write it (appendTraceValue):
// a number is whole (kInt) when its JSON text has no fraction or exponent
// and fits int64, so a value read back from JSON has the kind it had.
func kindOf(v any) kinds {
	switch t := v.(type) {
	case nil:
		return 0
	case string:
		return kString
	case bool:
		return kBool
	case int, int64, int32:
		return kInt
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return kString // JSON has no NaN: written as text
		}
		if t != math.Trunc(t) || t < -(1<<63) || t >= 1<<63 {
			return kDouble
		}
		var buf [32]byte
		if bytes.ContainsAny(strconv.AppendFloat(buf[:0], t, 'g', -1, 64), "e.") {
			return kDouble
		}
		return kInt
	}
	return kJSON
}

// flatType is the column type for the kinds a column held: bool, int64
// (every number whole), double (numbers), string (strings, or anything
// mixed, lists and objects: each value's text). A column that held only
// nulls is a string column.
func flatType(k kinds) parquetio.ColType {
	switch k {
	case kBool:
		return parquetio.ColBool
	case kInt:
		return parquetio.ColInt
	case kDouble, kInt | kDouble:
		return parquetio.ColFloat
	}
	return parquetio.ColString
}

// kindsOfType is what a column of type t held, as far as flatType goes.
func kindsOfType(t arrow.DataType) kinds {
	switch t.ID() {
	case arrow.BOOL:
		return kBool
	case arrow.INT64:
		return kInt
	case arrow.FLOAT64:
		return kDouble
	}
	return kString
}

// flatValue converts v for a column of type t; ok is false when it does
// not fit (the column's type must change).
func flatValue(v any, t parquetio.ColType) (any, bool) {
	if v == nil {
		return nil, true
	}
	k := kindOf(v)
	switch t {
	case parquetio.ColBool:
		b, ok := v.(bool)
		return b, ok
	case parquetio.ColInt:
		if k != kInt {
			return nil, false
		}
		switch n := v.(type) {
		case int:
			return int64(n), true
		case int64:
			return n, true
		case int32:
			return int64(n), true
		case float64:
			return int64(n), true
		}
	case parquetio.ColFloat:
		if k != kInt && k != kDouble {
			return nil, false
		}
		switch n := v.(type) {
		case int:
			return float64(n), true
		case int64:
			return float64(n), true
		case int32:
			return float64(n), true
		case float64:
			return n, true
		}
	case parquetio.ColString:
		if s, ok := v.(string); ok {
			return s, true
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return fmt.Sprint(f), true // as the JSON column has it
		}
		return string(appendTraceValue(nil, v, false)), true
	}
	return nil, false
}

// flatHold is how many rows decide the flat columns' first types (tests
// make it smaller to see the file written again). Held rows keep their
// text alive until the file is created, so a row group's worth is not held.
var flatHold = 1024

// flatRewrites counts the results files written again (for tests).
var flatRewrites atomic.Int64

// resultsWriter writes results.parquet: the columns every results file
// has (base), then the flat columns, typed by what they hold over the whole
// file. Their types are taken, when the rows come from an earlier
// results.parquet, from its columns, else from the first flatHold rows'
// values (the file is created once they are in); a later value that does
// not fit is written null and, at Commit, the file is written again with
// the types all its values need, those columns read from the JSON columns.
type resultsWriter struct {
	path  string
	base  []parquetio.Column
	flat  []flatCol
	seen  []kinds
	types []parquetio.ColType // as written; nil until the file is created
	w     *parquetio.Writer
	held  [][]any
	// rewrote: Commit wrote the file again (a column changed type).
	rewrote bool
}

// newResultsWriter starts results.parquet at path; like names an earlier
// results.parquet whose rows will be copied in (WriteRecord), "" for none.
func (e *Engine) newResultsWriter(path, like string) (*resultsWriter, error) {
	rw := &resultsWriter{path: path, base: e.baseResultColumns(), flat: e.flatCols()}
	rw.seen = make([]kinds, len(rw.flat))
	if like == "" {
		return rw, nil
	}
	_, rdr, fr, err := parquetio.Open(like)
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	schema, err := fr.Schema()
	if err != nil {
		return nil, err
	}
	types := make([]kinds, len(rw.flat))
	for i, fc := range rw.flat {
		if idx := schema.FieldIndices(fc.name); len(idx) == 1 {
			types[i] = kindsOfType(schema.Field(idx[0]).Type)
		}
	}
	return rw, rw.create(types)
}

// columns is the file's columns with the flat ones of the given types.
func (rw *resultsWriter) columns(types []parquetio.ColType) []parquetio.Column {
	cols := append([]parquetio.Column(nil), rw.base...)
	for i, fc := range rw.flat {
		cols = append(cols, col(fc.name, types[i], false))
	}
	return cols
}

// create makes the file with the flat columns typed for the given kinds.
func (rw *resultsWriter) create(ks []kinds) error {
	rw.types = make([]parquetio.ColType, len(rw.flat))
	for i := range rw.flat {
		rw.types[i] = rw.typeFor(i, ks[i])
	}
	w, err := parquetio.Create(rw.path, rw.columns(rw.types))
	if err != nil {
		return err
	}
	rw.w = w
	held := rw.held
	rw.held = nil
	for _, vals := range held {
		if err := rw.append(vals); err != nil {
			return err
		}
	}
	return nil
}

// typeFor is column i's type for the kinds it held; a subset column is
// always bool.
func (rw *resultsWriter) typeFor(i int, k kinds) parquetio.ColType {
	if rw.flat[i].src == flatSubset {
		return parquetio.ColBool
	}
	return flatType(k)
}

// Append adds a row: the base values, then the flat values as they are.
func (rw *resultsWriter) Append(vals ...any) error {
	nb := len(rw.base)
	if len(vals) != nb+len(rw.flat) {
		return fmt.Errorf("results.parquet: %d values for %d columns", len(vals), nb+len(rw.flat))
	}
	for i, v := range vals[nb:] {
		rw.seen[i] |= kindOf(v)
	}
	if rw.w == nil {
		rw.held = append(rw.held, vals)
		if len(rw.held) < flatHold {
			return nil
		}
		return rw.create(rw.seen)
	}
	return rw.append(vals)
}

func (rw *resultsWriter) append(vals []any) error {
	nb := len(rw.base)
	for i, v := range vals[nb:] {
		x, ok := flatValue(v, rw.types[i])
		if !ok {
			x = nil // the column is written again at Commit
		}
		vals[nb+i] = x
	}
	return rw.w.Append(vals...)
}

// WriteRecord copies rows of an earlier results.parquet of the same
// columns.
func (rw *resultsWriter) WriteRecord(rec arrow.RecordBatch) error {
	if rw.w == nil {
		if err := rw.create(rw.seen); err != nil {
			return err
		}
	}
	nb := len(rw.base)
	for i := range rw.flat {
		if c := nb + i; c < int(rec.NumCols()) && rec.Column(c).NullN() < rec.Column(c).Len() {
			rw.seen[i] |= kindsOfType(rec.Column(c).DataType())
		}
	}
	return rw.w.WriteRecord(rec)
}

// Abort drops the file.
func (rw *resultsWriter) Abort() {
	rw.held = nil
	if rw.w != nil {
		rw.w.Abort()
	}
}

// Commit finishes the file, writing it again when a flat column's values
// need another type than it was created with.
func (rw *resultsWriter) Commit() error {
	if rw.w == nil {
		if err := rw.create(rw.seen); err != nil {
			return err
		}
	}
	if err := rw.w.Commit(); err != nil {
		return err
	}
	final := make([]parquetio.ColType, len(rw.flat))
	again := false
	for i := range rw.flat {
		final[i] = rw.typeFor(i, rw.seen[i])
		again = again || final[i] != rw.types[i]
	}
	if !again {
		return nil
	}
	rw.rewrote = true
	flatRewrites.Add(1)
	return rw.rewrite(final)
}

// rewrite writes the committed file again with the flat columns of the
// given types, the changed ones read from the JSON columns.
func (rw *resultsWriter) rewrite(final []parquetio.ColType) error {
	f, rdr, fr, err := parquetio.Open(rw.path)
	if err != nil {
		return err
	}
	defer f.Close()
	defer rdr.Close()
	fr.Props.BatchSize = copyBatch
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	cols := rw.columns(final)
	w, err := parquetio.Create(rw.path, cols)
	if err != nil {
		return err
	}
	nb := len(rw.base)
	for rr.Next() {
		rec := rr.RecordBatch()
		arrs := make([]arrow.Array, len(cols))
		var release []arrow.Array
		var parsed [4][]map[string]json.RawMessage
		for c := range cols {
			i := c - nb
			if i < 0 || final[i] == rw.types[i] {
				arrs[c] = rec.Column(c)
				continue
			}
			fc := rw.flat[i]
			if parsed[fc.src] == nil {
				if parsed[fc.src], err = parseJSONColumn(rec, flatJSONColumn[fc.src]); err != nil {
					w.Abort()
					return err
				}
			}
			a, err := buildFlat(parsed[fc.src], fc.key, final[i])
			if err != nil {
				w.Abort()
				return fmt.Errorf("%s: column %s: %w", rw.path, fc.name, err)
			}
			arrs[c], release = a, append(release, a)
		}
		out := array.NewRecordBatch(w.Schema(), arrs, rec.NumRows())
		err := w.WriteRecord(out)
		out.Release()
		for _, a := range release {
			a.Release()
		}
		if err != nil {
			w.Abort()
			return err
		}
	}
	if err := rr.Err(); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// parseJSONColumn decodes a JSON object column's rows, keeping each
// field's text (nil for a null row).
func parseJSONColumn(rec arrow.RecordBatch, name string) ([]map[string]json.RawMessage, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("no %s column", name)
	}
	a := rec.Column(idx[0])
	out := make([]map[string]json.RawMessage, a.Len())
	for i := range out {
		s, ok := parquetio.StringAt(a, i)
		if !ok {
			continue
		}
		if err := json.Unmarshal([]byte(s), &out[i]); err != nil {
			return nil, fmt.Errorf("row %d: %s: %w", i, name, err)
		}
	}
	return out, nil
}

// rawValue is a JSON value read back as the Go value kindOf sees.
func rawValue(raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case 'n':
		return nil
	case 't':
		return true
	case 'f':
		return false
	case '"':
		var s string
		json.Unmarshal(raw, &s)
		return s
	case '{', '[':
		return rawJSON(raw)
	}
	if !bytes.ContainsAny(raw, ".eE") {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return n
		}
	}
	f, _ := strconv.ParseFloat(string(raw), 64)
	return f
}

// rawJSON is a list or object kept as its text.
type rawJSON []byte

// buildFlat makes a flat column of type t from the rows' parsed JSON.
func buildFlat(rows []map[string]json.RawMessage, key string, t parquetio.ColType) (arrow.Array, error) {
	mem := memory.DefaultAllocator
	switch t {
	case parquetio.ColBool:
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		for i, r := range rows {
			switch v := rawValue(r[key]).(type) {
			case nil:
				b.AppendNull()
			case bool:
				b.Append(v)
			default:
				return nil, fmt.Errorf("row %d holds %T, not a boolean", i, v)
			}
		}
		return b.NewArray(), nil
	case parquetio.ColInt:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i, r := range rows {
			switch v := rawValue(r[key]).(type) {
			case nil:
				b.AppendNull()
			case int64:
				b.Append(v)
			default:
				return nil, fmt.Errorf("row %d holds %T, not a whole number", i, v)
			}
		}
		return b.NewArray(), nil
	case parquetio.ColFloat:
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		for i, r := range rows {
			switch v := rawValue(r[key]).(type) {
			case nil:
				b.AppendNull()
			case int64:
				b.Append(float64(v))
			case float64:
				b.Append(v)
			default:
				return nil, fmt.Errorf("row %d holds %T, not a number", i, v)
			}
		}
		return b.NewArray(), nil
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	for _, r := range rows {
		raw := bytes.TrimSpace(r[key])
		switch v := rawValue(raw).(type) {
		case nil:
			b.AppendNull()
		case string:
			b.Append(v)
		default:
			b.Append(string(raw))
		}
	}
	return b.NewArray(), nil
}
