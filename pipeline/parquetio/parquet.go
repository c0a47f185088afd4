package parquetio

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ColType is the type of a Parquet column.
type ColType int

const (
	ColString ColType = iota
	ColInt
	ColFloat
	ColBool
	ColTime
)

// Column declares one Parquet column; every column is nullable so a missing
// value is a null, never a made-up zero.
type Column struct {
	Name string
	Type ColType
	// Dict asks for dictionary encoding: worth it for strings that repeat
	// (model, stage), wasted work for long unique text (prompts, replies).
	Dict bool
}

func (c Column) arrowType() arrow.DataType {
	switch c.Type {
	case ColInt:
		return arrow.PrimitiveTypes.Int64
	case ColFloat:
		return arrow.PrimitiveTypes.Float64
	case ColBool:
		return arrow.FixedWidthTypes.Boolean
	case ColTime:
		return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	}
	return arrow.BinaryTypes.String
}

// Writer streams rows into a Parquet file that only replaces its
// destination once Commit has written it completely: a killed run leaves the
// previous file intact.
type Writer struct {
	final, tmp string
	f          *os.File
	fw         *pqarrow.FileWriter
	rb         *array.RecordBuilder
	cols       []Column
	pending    int
	rows       int
	// held are rows waiting to fill a row group together: the appended
	// rows sealed so far and rows copied whole (WriteRecord), in order.
	held     []arrow.RecordBatch
	heldRows int
	// bytes is the text appended since the last flush.
	bytes int
	// closing: no row will follow (no buffers to take for them).
	closing bool
	// next is what the next rows are expected to take: their count, then
	// each column's text bytes (seal); used up by the first of them.
	next []int
	// reserved: the buffers of the rows being appended were taken at the
	// size next gave (reserve), so text grows them by quarters.
	reserved bool
}

// A row group holds RowBatch rows, or fewer when their text passes
// parquetBatchBytes: wide rows (whole replies) must not pile up in memory.
// A row group's builders are reserved whole, so this bound is what a
// writer's buffers cost; 4 MiB keeps them small (8 MiB costs the quickstart
// about 20 MB more peak RSS) without slowing apply at 1,000,000 cases.
const (
	RowBatch          = 8192
	parquetBatchBytes = 4 << 20
)

// Create starts writing path (through a temporary file beside it).
// codec is optional (default Zstd: small files; large logs pass Snappy, faster).
func Create(path string, cols []Column, codec ...compress.Compression) (*Writer, error) {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.Name, Type: c.arrowType(), Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	f, err := createTemp(path)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	c := compress.Codecs.Zstd
	if len(codec) > 0 {
		c = codec[0]
	}
	opts := []parquet.WriterProperty{parquet.WithCompression(c), parquet.WithDictionaryDefault(false)}
	if c == compress.Codecs.Zstd {
		// zstd's fastest level: most of the size for a third of the time.
		opts = append(opts, parquet.WithCompressionLevel(1))
	}
	for _, col := range cols {
		if col.Dict {
			opts = append(opts, parquet.WithDictionaryFor(col.Name, true))
		}
	}
	props := parquet.NewWriterProperties(opts...)
	fw, err := pqarrow.NewFileWriter(schema, syncOnClose{f}, props, pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &Writer{final: path, tmp: f.Name(), f: f, fw: fw, rb: array.NewRecordBuilder(memory.DefaultAllocator, schema), cols: cols}, nil
}

// Append adds one row; vals follow the columns. Accepted values: string,
// int, int64, float64, bool, time.Time, pointers to those (nil = null), nil.
func (w *Writer) Append(vals ...any) error {
	if len(vals) != len(w.cols) {
		return fmt.Errorf("parquet %s: %d values for %d columns", filepath.Base(w.final), len(vals), len(w.cols))
	}
	if len(w.next) > 0 {
		w.reserve()
	}
	for i, v := range vals {
		b := w.rb.Field(i)
		if v == nil {
			b.AppendNull()
			continue
		}
		switch x := v.(type) {
		case string:
			w.appendText(b.(*array.StringBuilder), x)
		case *string:
			if x == nil {
				b.AppendNull()
			} else {
				w.appendText(b.(*array.StringBuilder), *x)
			}
		case int:
			b.(*array.Int64Builder).Append(int64(x))
		case int64:
			b.(*array.Int64Builder).Append(x)
		case *int64:
			if x == nil {
				b.AppendNull()
			} else {
				b.(*array.Int64Builder).Append(*x)
			}
		case float64:
			b.(*array.Float64Builder).Append(x)
		case *float64:
			if x == nil {
				b.AppendNull()
			} else {
				b.(*array.Float64Builder).Append(*x)
			}
		case bool:
			b.(*array.BooleanBuilder).Append(x)
		case *bool:
			if x == nil {
				b.AppendNull()
			} else {
				b.(*array.BooleanBuilder).Append(*x)
			}
		case time.Time:
			ts, _ := arrow.TimestampFromTime(x, arrow.Millisecond)
			b.(*array.TimestampBuilder).Append(ts)
		default:
			return fmt.Errorf("parquet column %s: unsupported value %T", w.cols[i].Name, v)
		}
	}
	w.pending++
	w.rows++
	if w.pending+w.heldRows >= RowBatch || w.bytes >= parquetBatchBytes {
		return w.flush()
	}
	return nil
}

// appendText appends a text value. Past the buffer taken at the last row
// group's size (reserve), text grows it by a quarter, not to the next power
// of two as arrow's builder does: doubling lets a row group a little wider
// than the last hold up to twice its text in buffers (the collector tracks
// them all at a flush), and one step of a quarter allocates less than a
// doubling. A row group with no size to go by (the first) doubles:
// growing from nothing by quarters would copy its text many times over.
func (w *Writer) appendText(sb *array.StringBuilder, s string) {
	if n := sb.DataLen() + len(s); w.reserved && n > sb.DataCap() {
		sb.ReserveData(max(len(s), sb.DataLen()/4))
	}
	sb.Append(s)
	w.bytes += len(s)
}

// reserve takes the buffers of the rows to come at the size seal expects.
func (w *Writer) reserve() {
	rows, data := w.next[0], w.next[1:]
	w.next = w.next[:0]
	w.reserved = true
	for i := range w.cols {
		f := w.rb.Field(i)
		f.Reserve(rows)
		if sb, ok := f.(*array.StringBuilder); ok && data[i] > 0 {
			sb.ReserveData(data[i] + data[i]/8)
		}
	}
}

// seal moves the appended rows to held.
func (w *Writer) seal() {
	if w.pending == 0 {
		return
	}
	w.planNext()
	w.reserved = false
	w.held = append(w.held, w.rb.NewRecordBatch())
	w.heldRows += w.pending
	w.pending = 0
}

// planNext notes the size of the appended rows for the rows to come: they
// will likely be as many and as wide, so their buffers are taken at that
// size (and an eighth more for text) at once, when the first of them comes
// (once these rows are written and their buffers dropped), not grown by
// doubling, each step a buffer to allocate, copy and drop: under apply's
// soft memory limit every byte allocated costs collector time.
func (w *Writer) planNext() {
	if w.closing {
		return
	}
	w.next = w.next[:0]
	w.next = append(w.next, w.pending)
	for i := range w.cols {
		n := 0
		if sb, ok := w.rb.Field(i).(*array.StringBuilder); ok {
			n = sb.DataLen()
		}
		w.next = append(w.next, n)
	}
}

// flush writes what is held as one row group.
func (w *Writer) flush() error {
	if len(w.held) == 0 {
		return w.writeAppended()
	}
	w.seal()
	w.bytes = 0
	if len(w.held) == 0 {
		return nil
	}
	held := w.held
	w.held, w.heldRows = nil, 0
	defer func() {
		for _, r := range held {
			r.Release()
		}
	}()
	if len(held) == 1 {
		return w.fw.Write(held[0])
	}
	schema := w.rb.Schema()
	cols := make([]arrow.Array, schema.NumFields())
	n := int64(0)
	for _, r := range held {
		n += r.NumRows()
	}
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c := range cols {
		parts := make([]arrow.Array, len(held))
		for i, r := range held {
			parts[i] = r.Column(c)
		}
		joined, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		cols[c] = joined
	}
	rec := array.NewRecordBatch(schema, cols, n)
	defer rec.Release()
	return w.fw.Write(rec)
}

// writeAppended writes the appended rows as one row group a column at a
// time, each column's buffers dropped once it is written: Parquet writes a
// row group column after column, so a record of the whole group (what
// pqarrow's Write takes) would keep every column's text live until the last
// was written, beside the pages of the column being written. The bytes are
// Write's: the same columns in the same calls; the row group
// closes when the next one starts or the file closes.
func (w *Writer) writeAppended() error {
	w.bytes = 0
	if w.pending == 0 {
		return nil
	}
	w.planNext()
	w.pending, w.reserved = 0, false
	if err := w.fw.NewRowGroupChecked(); err != nil {
		return err
	}
	for i := range w.cols {
		col := w.rb.Field(i).NewArray()
		err := w.fw.WriteColumnData(col)
		col.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteRecord writes whole rows at once (copied from another file of the
// same columns), after the rows appended so far.
func (w *Writer) WriteRecord(rec arrow.RecordBatch) error {
	want := w.rb.Schema()
	if rec.Schema().NumFields() != want.NumFields() {
		return fmt.Errorf("parquet %s: the rows to copy have %d columns, not %d", filepath.Base(w.final), rec.Schema().NumFields(), want.NumFields())
	}
	for i, f := range rec.Schema().Fields() {
		if g := want.Field(i); f.Name != g.Name || !arrow.TypeEqual(f.Type, g.Type) {
			return fmt.Errorf("parquet %s: the rows to copy have column %s %s where %s %s is written", filepath.Base(w.final), f.Name, f.Type, g.Name, g.Type)
		}
	}
	// The same columns under this file's schema (a file read back carries
	// field metadata of its own), after the rows appended so far.
	w.seal()
	w.held = append(w.held, array.NewRecordBatch(want, rec.Columns(), rec.NumRows()))
	w.heldRows += int(rec.NumRows())
	w.rows += int(rec.NumRows())
	if w.heldRows >= RowBatch {
		return w.flush()
	}
	return nil
}

// Schema is the file's Arrow schema (what WriteRecord takes).
func (w *Writer) Schema() *arrow.Schema { return w.rb.Schema() }

// Rows is the number of rows appended so far.
func (w *Writer) Rows() int { return w.rows }

// Commit finishes the file and moves it into place atomically.
func (w *Writer) Commit() error {
	w.closing = true
	if err := w.flush(); err != nil {
		w.Abort()
		return err
	}
	w.rb.Release()
	if err := w.fw.Close(); err != nil { // also closes f
		os.Remove(w.tmp)
		return err
	}
	if err := os.Rename(w.tmp, w.final); err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("cannot replace %s: %w", w.final, err)
	}
	return nil
}

// Abort drops the partial file and leaves any previous version alone.
func (w *Writer) Abort() {
	for _, r := range w.held {
		r.Release()
	}
	w.held, w.heldRows = nil, 0
	if w.rb != nil {
		w.rb.Release()
		w.rb = nil
	}
	if w.fw != nil {
		w.fw.Close()
		w.fw = nil
	}
	os.Remove(w.tmp)
}

// syncOnClose makes the Parquet writer's final Close reach the disk before
// the rename that publishes the file.
type syncOnClose struct{ *os.File }

func (s syncOnClose) Close() error {
	if err := s.File.Sync(); err != nil {
		s.File.Close()
		return err
	}
	return s.File.Close()
}

// createTemp makes a new file beside path, to be renamed over it once
// complete. Its mode is 0666 less the umask, as any tool's new file:
// os.CreateTemp would make it 0600, unreadable to colleagues.
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for i := 0; ; i++ {
		name := filepath.Join(dir, "."+base+TmpMark+RandomSuffix())
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if os.IsExist(err) && i < 100 {
			continue
		}
		return f, err
	}
}

// WriteFileAtomic writes data to path through a temporary file and rename.
func WriteFileAtomic(path string, data []byte) error {
	f, err := createTemp(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
