package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// MaxLineBytes bounds one JSONL line (or one CSV record's buffer). MORABLES
// fables and model replies run to several KiB; 64 MiB leaves room for
// anything a prompt could hold while still refusing a runaway file.
const MaxLineBytes = 64 << 20

// rowFunc receives each parsed row with its 1-based row number: the line for
// JSONL/CSV/TSV (where the record starts), the element for a JSON array and
// the row for Parquet.
type rowFunc func(row int, rec map[string]any) error

// source names the file being read, for error messages.
type source struct{ path string }

func (s source) errf(row int, field, format string, args ...any) *Error {
	return &Error{Path: s.path, Row: row, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// readFile opens path, undoes gzip when the content starts with the gzip
// magic (so a ".gz" name is optional and a misnamed file still works), and
// streams its rows to fn. baseDir only improves the not-found message.
func readFile(path, format, field, baseDir string, fn rowFunc) (int, error) {
	src := source{path}
	f, err := os.Open(path)
	if err != nil {
		abs, _ := filepath.Abs(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return 0, src.errf(0, "", "file not found (resolved to %s from base folder %q); fix dataset.%s, which is relative to the folder of the YAML file that declares it", abs, baseDir, field)
		default:
			return 0, src.errf(0, "", "cannot open: %v", err)
		}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return 0, src.errf(0, "", "is a folder, not a data file; point dataset.%s at a file", field)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	magic, err := br.Peek(2)
	if len(magic) == 0 && err == io.EOF {
		return 0, src.errf(0, "", "file is empty; it needs at least one row")
	}
	var r io.Reader = br
	gz := len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b
	if gz {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, src.errf(0, "", "broken gzip header: %v; re-compress the file", err)
		}
		defer zr.Close()
		r = zr
	}
	if format == "parquet" {
		ff, ok := linkedFormat("parquet")
		if !ok {
			return 0, src.errf(0, "", "%s", notLinked("parquet"))
		}
		// Parquet needs random access (the footer is at the end); a
		// gzipped Parquet file is inflated into memory first.
		var ra ReaderAtSeeker = f
		if gz {
			data, err := io.ReadAll(r)
			if err != nil {
				return 0, src.errf(0, "", "cannot decompress: %v", err)
			}
			ra = bytes.NewReader(data)
		}
		return ff.Read(path, ra, fn)
	}
	n, err := src.readStream(r, format, fn)
	if err != nil {
		return n, err
	}
	return n, nil
}

// readStream dispatches the streaming (non-Parquet) formats. It returns the
// number of rows read and reports an error for a file without rows.
func (s source) readStream(r io.Reader, format string, fn rowFunc) (int, error) {
	var n int
	var err error
	switch format {
	case "jsonl":
		n, err = s.readJSONL(r, fn)
	case "json":
		n, err = s.readJSONArray(r, fn)
	case "csv":
		n, err = s.readDelimited(r, ',', fn)
	case "tsv":
		n, err = s.readDelimited(r, '\t', fn)
	default:
		return 0, s.errf(0, "", "unknown format %q; set dataset.format to one of jsonl, json, csv, tsv, parquet", format)
	}
	if err != nil {
		return n, err
	}
	if n == 0 {
		return 0, s.errf(0, "", "contains no rows; check that it is the right file and format %s", format)
	}
	return n, nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// jsonlChunk is a run of a JSONL file's lines, decoded by a worker while
// the reader goes on; chunks reach fn in file order.
type jsonlChunk struct {
	buf    []byte
	ends   []int // end of each line in buf
	lines  []int // its line number
	recs   []map[string]any
	bad    int // index of the first line that is not an object, or -1
	badErr error
	done   chan struct{}
}

const jsonlChunkBytes = 256 << 10

// readJSONL decodes lines on every core (decoding is most of a large
// dataset's load) and hands the rows to fn one at a time, in order, as a
// single reader would, with the same errors at the same lines.
func (s source) readJSONL(r io.Reader, fn rowFunc) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	workers := max(1, runtime.GOMAXPROCS(0))
	order := make(chan *jsonlChunk, 2*workers)
	work := make(chan *jsonlChunk, 2*workers)
	stop := make(chan struct{})
	var scanErr error
	var lastLine int
	go func() {
		defer close(order)
		defer close(work)
		line := 0
		c := &jsonlChunk{bad: -1, done: make(chan struct{})}
		send := func() bool {
			select {
			case order <- c:
			case <-stop:
				return false
			}
			work <- c
			c = &jsonlChunk{bad: -1, done: make(chan struct{})}
			return true
		}
		for sc.Scan() {
			line++
			b := sc.Bytes()
			if line == 1 {
				b = bytes.TrimPrefix(b, utf8BOM)
			}
			if len(bytes.TrimSpace(b)) == 0 {
				continue // blank lines (often a trailing one) are not rows
			}
			c.buf = append(c.buf, b...)
			c.ends = append(c.ends, len(c.buf))
			c.lines = append(c.lines, line)
			if len(c.buf) >= jsonlChunkBytes && !send() {
				return
			}
		}
		lastLine, scanErr = line, sc.Err()
		if len(c.ends) > 0 {
			send()
		}
	}()
	for range workers {
		go func() {
			for c := range work {
				c.recs = make([]map[string]any, len(c.ends))
				from := 0
				for i, end := range c.ends {
					rec, err := decodeObject(c.buf[from:end])
					if err != nil {
						c.bad, c.badErr = i, err
						break
					}
					c.recs[i] = rec
					from = end
				}
				c.buf = nil
				close(c.done)
			}
		}()
	}
	quit := func() {
		close(stop)
		for c := range order {
			<-c.done
		}
	}
	n := 0
	for c := range order {
		<-c.done
		for i, rec := range c.recs {
			if i == c.bad {
				quit()
				return n, s.errf(c.lines[i], "", "%v; fix this line (each line must be one JSON object)", c.badErr)
			}
			n++
			if err := fn(c.lines[i], rec); err != nil {
				quit()
				return n, err
			}
		}
	}
	if err := scanErr; err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return n, s.errf(lastLine+1, "", "line is longer than %d MiB; split the record or use another format", MaxLineBytes>>20)
		}
		return n, s.errf(lastLine+1, "", "read failed: %v", err)
	}
	return n, nil
}

// decodeObject parses exactly one JSON object.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("malformed JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("malformed JSON: extra data after the object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected a JSON object, got %s", describe(normalize(v)))
	}
	normalize(m)
	return m, nil
}

func (s source) readJSONArray(r io.Reader, fn rowFunc) (int, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	dec.UseNumber()
	tok, err := dec.Token()
	if err == io.EOF {
		return 0, nil
	}
	if d, ok := tok.(json.Delim); err != nil || !ok || d != '[' {
		return 0, s.errf(0, "", "format json needs a top-level array of objects ([{…}, {…}]); for one object per line use format jsonl")
	}
	n := 0
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			return n, s.errf(n+1, "", "malformed JSON in array element %d (near byte %d): %v; fix the element", n+1, dec.InputOffset(), err)
		}
		n++
		m, ok := v.(map[string]any)
		if !ok {
			return n, s.errf(n, "", "array element %d is %s, not an object; every element must be a JSON object", n, describe(normalize(v)))
		}
		normalize(m)
		if err := fn(n, m); err != nil {
			return n, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return n, s.errf(n+1, "", "malformed JSON after array element %d: %v; close the array with ]", n, err)
	}
	return n, nil
}

func (s source) readDelimited(r io.Reader, comma rune, fn rowFunc) (int, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.Comma = comma
	// Hand-made TSVs often contain bare quotes inside fields; be lenient
	// there. CSV stays strict so a broken quote is reported, not absorbed.
	cr.LazyQuotes = comma == '\t'
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return 0, nil
	}
	if err != nil {
		return 0, s.csvErr(err)
	}
	cols := make([]string, len(header))
	for i, h := range header {
		if i == 0 {
			h = string(bytes.TrimPrefix([]byte(h), utf8BOM))
		}
		if h == "" {
			return 0, s.errf(1, "", "header column %d is empty; every column needs a name", i+1)
		}
		for _, prev := range cols[:i] {
			if prev == h {
				return 0, s.errf(1, h, "header names column %q twice; rename one", h)
			}
		}
		cols[i] = h
	}
	n := 0
	for {
		recs, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, s.csvErr(err)
		}
		line, _ := cr.FieldPos(0)
		n++
		m := make(map[string]any, len(cols))
		for i, c := range cols {
			m[c] = recs[i]
		}
		if err := fn(line, m); err != nil {
			return n, err
		}
	}
	if n == 0 {
		return 0, s.errf(0, "", "has a header but no data rows")
	}
	return n, nil
}

func (s source) csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return s.errf(pe.StartLine, "", "has a different number of fields than the header; fix the row (quote values that contain the separator)")
		}
		return s.errf(pe.StartLine, "", "malformed CSV: %v; fix the row", pe.Err)
	}
	return s.errf(0, "", "read failed: %v", err)
}
