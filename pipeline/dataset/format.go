package dataset

import (
	"fmt"
	"io"
	"sync"
)

// A FileFormat reads a format whose library lives in a package of its own,
// so that dataset links none of it: Parquet, read by
// pipeline/dataset/parquetfmt. That package registers the format from
// init, like a database/sql driver, and every program that loads studies
// imports it (import _ ".../pipeline/dataset/parquetfmt"). A format that
// is not linked in is an error naming the file, never an empty dataset.
type FileFormat struct {
	// Read streams the rows of the file at path, opened as r (a gzipped
	// file arrives inflated), to fn with their 1-based row numbers and
	// values as DecodeRow gives them, and returns how many rows it read.
	// Its errors are *Error naming path; a file without rows is one.
	Read func(path string, r ReaderAtSeeker, fn func(row int, rec map[string]any) error) (int, error)
	// Scan streams the named columns (every column when cols is nil) of
	// each row of the file at path to fn, with the values' own types.
	Scan func(path string, cols []string, fn func(map[string]any)) error
}

// ReaderAtSeeker is a file a FileFormat can read at any offset.
type ReaderAtSeeker interface {
	io.ReaderAt
	io.Seeker
}

// outside lists the formats read outside dataset: the format's name in
// messages and the package that links it in.
var outside = map[string]struct{ name, pkg string }{
	"parquet": {"Parquet", "github.com/promoral/promoral/pipeline/dataset/parquetfmt"},
}

var (
	formatsMu sync.RWMutex
	formats   = map[string]FileFormat{}
)

// RegisterFormat links in the reader of a format (one of Formats that
// dataset does not read itself). It panics on an unknown name, a missing
// Read or Scan, or a second registration: each is a programming error.
func RegisterFormat(name string, f FileFormat) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	if _, ok := outside[name]; !ok {
		panic(fmt.Sprintf("dataset: RegisterFormat of %q, which is not a format read outside dataset", name))
	}
	if f.Read == nil || f.Scan == nil {
		panic(fmt.Sprintf("dataset: RegisterFormat of %q without Read or Scan", name))
	}
	if _, dup := formats[name]; dup {
		panic(fmt.Sprintf("dataset: format %q registered twice", name))
	}
	formats[name] = f
}

func linkedFormat(name string) (FileFormat, bool) {
	formatsMu.RLock()
	defer formatsMu.RUnlock()
	f, ok := formats[name]
	return f, ok
}

// notLinked says that the reader of format is missing from the program
// and which package links it in.
func notLinked(format string) string {
	o := outside[format]
	return fmt.Sprintf("%s support is not linked into this program, so the file cannot be read; import _ %q in the program's main package", o.name, o.pkg)
}

// ScanFile streams the named columns (every column when cols is nil) of
// each row of the file at path, in a format read outside dataset (e.g.
// "parquet"), to fn; run folders' results.parquet are read this way.
func ScanFile(path, format string, cols []string, fn func(map[string]any)) error {
	f, ok := linkedFormat(format)
	if !ok {
		if _, known := outside[format]; !known {
			return fmt.Errorf("%s: format %q is not one read outside dataset", path, format)
		}
		return fmt.Errorf("%s: %s", path, notLinked(format))
	}
	return f.Scan(path, cols, fn)
}

// DecodeRow parses one JSON object into a row's values exactly as the JSON
// formats do (whole numbers as int, others as float64, nested objects
// and arrays kept); a FileFormat that renders rows as JSON uses it so every
// format gives one value model.
func DecodeRow(b []byte) (map[string]any, error) { return decodeObject(b) }
