// Package dataset loads the items of a task from a data file described by a
// Spec (a task YAML's `dataset:` mapping). Adding a dataset in a known format
// (JSONL, JSON array, CSV, TSV, Parquet; any of them gzipped) needs only
// YAML: column mapping, type conversion, filtering, limiting, seeded
// sampling, one-row-to-many expansion (contrast pairs) and seeded option
// shuffling with the gold answer mapped through. Parquet is read by
// pipeline/dataset/parquetfmt, which programs import (format.go), so this
// package links no Arrow.
//
// Loading is deterministic: the same Spec and file give the same items in
// the same order on every run and platform. Random choices (Sample,
// Shuffle) are keyed by (seed, item id) rather than by position, so an item
// keeps its draw and its option order when other rows are filtered out.
//
// Errors name the file, the 1-based row (the line for JSONL, CSV and TSV)
// and the field, and say how to fix the problem.
package dataset

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Item is one unit of evaluation.
type Item struct {
	// ID is unique within the loaded dataset and stable across runs.
	ID string `json:"id"`
	// Row is the 1-based source row: the line where the record starts for
	// JSONL/CSV/TSV, the element for a JSON array, the row for Parquet.
	// Expanded variants share their row.
	Row int `json:"row"`
	// Fields holds every source column under its own name, plus the mapped,
	// typed, expanded and shuffled fields the Spec adds; nil when they were
	// moved to the Store (Ref).
	Fields map[string]any `json:"fields"`
	// Ref locates the fields in the Store LoadWith was given, when the
	// dataset was too large to keep them in memory; Digest is then the
	// number Options.Digest returned for them before they went (0 when
	// it was not called).
	Ref    Ref    `json:"-"`
	Digest uint32 `json:"-"`
}

// Error is a problem found while reading data. Row is 0 when the problem is
// not tied to one row; Field is "" when it is not tied to one field.
type Error struct {
	Path  string
	Row   int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Row > 0 {
		b.WriteString(": row ")
		b.WriteString(strconv.Itoa(e.Row))
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads the data file described by spec. Relative paths (Path and
// Exclude.Path) are resolved against baseDir, the folder of the YAML file
// that declares the spec. Spec problems are reported before any data is
// read, all at once (joined).
func Load(spec *Spec, baseDir string) ([]Item, error) {
	return LoadWith(spec, baseDir, Options{})
}

// Options adjust LoadWith.
type Options struct {
	// Store, when set, receives the fields of a dataset whose fields are
	// estimated to take more than SpillAbove bytes: its items come back
	// with a Ref instead of Fields.
	Store *Store
	// Digest, when set, is called with the fields of each item moved to
	// the store, so the caller keeps what it needs of every item without
	// reading them all back. It returns a number (say, a place in a table
	// of the caller's), not a value: a value in an interface would be an
	// allocation an item, a million of them for a large dataset.
	Digest func(fields map[string]any) uint32
	// Each, when set, receives the items in order, item i of n, instead
	// of LoadWith's result (then nil): a caller that keeps the items in a
	// form of its own never holds them twice, and the loader lets go of
	// its rows as it hands them on. After an error, the items handed on
	// so far are not the dataset's and are to be dropped.
	Each func(i, n int, it Item)
}

// LoadWith is Load with options.
func LoadWith(spec *Spec, baseDir string, o Options) ([]Item, error) {
	if spec == nil {
		return nil, errors.New("dataset: no dataset spec; add a dataset: mapping to the task")
	}
	if errs := spec.Check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	path := spec.Resolve(baseDir)
	files := spec.Files
	if len(files) == 0 {
		if spec.Hub != nil {
			return nil, &Error{Path: spec.Hub.Name(), Msg: "the dataset is not fetched; run promoral data pull with the run file"}
		}
		files = []string{path}
	}
	l, err := newLoader(spec, files[0])
	if err != nil {
		return nil, err
	}
	l.store, l.digest = o.Store, o.Digest
	if ex := spec.Exclude; ex != nil {
		if l.exclude, err = excludeSet(ex, baseDir); err != nil {
			return nil, err
		}
	}
	for i, p := range files {
		format := fileFormat(spec.Format, spec.Path)
		if len(spec.Files) > 0 {
			format = fileFormat(spec.Format, p)
		}
		if i > 0 {
			l.src, l.stem = source{p}, stem(p)
		}
		if _, err := readFile(p, format, "path", baseDir, l.add); err != nil {
			return nil, err
		}
	}
	var items []Item
	each := o.Each
	if each == nil {
		each = func(i, n int, it Item) {
			if items == nil {
				items = make([]Item, n)
			}
			items[i] = it
		}
	}
	if err := l.finish(each); err != nil {
		return nil, err
	}
	if l.store != nil {
		if err := l.store.Flush(); err != nil {
			return nil, l.src.errf(0, "", "%v", err)
		}
	}
	return items, nil
}

// droppedID is the id of a row filter or exclude dropped.
type droppedID struct {
	id string
	n  int32
}

// row is a source row that survived filter and exclude.
type row struct {
	id     string
	rec    map[string]any // nil when spilled
	ref    Ref
	digest uint32
	n      int32 // as Item.Row; add refuses rows past MaxInt32
}

// rowChunk is how many rows a chunk of a rowList holds.
const rowChunk = 1 << 13

// rowList is the loader's rows in chunks: a million rows appended to one
// slice would double it again and again, each time copying it and leaving
// the old array to the collector, and finish could free none of it before
// the last item was made. Every chunk but the last holds rowChunk rows.
type rowList struct {
	chunks [][]row
	n      int
}

func (rl *rowList) push(r row) *row {
	if rl.n%rowChunk == 0 {
		// The first chunk starts small and grows as a slice does, so a
		// small dataset does not pay for a whole chunk.
		size := rowChunk
		if rl.n == 0 {
			size = 0
		}
		rl.chunks = append(rl.chunks, make([]row, 0, size))
	}
	c := &rl.chunks[len(rl.chunks)-1]
	*c = append(*c, r)
	rl.n++
	return &(*c)[len(*c)-1]
}

func (rl *rowList) at(i int) *row { return &rl.chunks[i/rowChunk][i%rowChunk] }

// slice copies the first n rows into one slice (for sample and expand,
// which need them together).
func (rl *rowList) slice(n int) []row {
	out := make([]row, 0, n)
	for _, c := range rl.chunks {
		out = append(out, c[:min(len(c), n-len(out))]...)
	}
	return out
}

type loader struct {
	spec    *Spec
	src     source
	stem    string
	filter  *filterProgram
	fields  []string // sorted keys of spec.Fields, for deterministic errors
	types   []string // sorted keys of spec.Types
	exclude map[string]bool
	seen    *idSet // every row's id, for duplicate detection
	// droppedIDs are the ids of the rows filter and exclude dropped,
	// which seen still counts.
	droppedIDs []droppedID
	total      int
	dropped    int // by exclude
	rows       rowList
	// store, when set, takes the rows' fields once resident passes
	// SpillAbove (spilling); err is the first failure to write it.
	store    *Store
	digest   func(map[string]any) uint32
	resident int64
	spilling bool
}

func newLoader(spec *Spec, path string) (*loader, error) {
	l := &loader{
		spec:   spec,
		src:    source{path},
		stem:   stem(path),
		fields: slices.Sorted(maps.Keys(spec.Fields)),
		types:  slices.Sorted(maps.Keys(spec.Types)),
	}
	l.seen = &idSet{entry: func(e uint32) (string, int) {
		if e&1 == 1 {
			d := l.droppedIDs[e>>1]
			return d.id, int(d.n)
		}
		r := l.rows.at(int(e >> 1))
		return r.id, int(r.n)
	}}
	if spec.Filter != "" {
		f, err := compileFilter(spec.Filter)
		if err != nil {
			return nil, &SpecError{Field: "filter", Msg: err.Error()}
		}
		l.filter = f
	}
	return l, nil
}

// add maps, types, identifies and filters one row. A missing mapped field
// is only an error for rows the filter keeps, so one file can mix row
// shapes (JBB rows have pair_id, XSTest rows have focus) and each task maps
// the fields of the rows it selects.
func (l *loader) add(n int, rec map[string]any) error {
	l.total++
	missing := map[string]string{} // item field -> why it is needed
	// Read every mapped value before writing any, so swaps (a: b, b: a)
	// and chains see the source row, not half-mapped state.
	vals := make([]any, len(l.fields))
	for i, name := range l.fields {
		v, ok := lookup(rec, l.spec.Fields[name])
		if !ok {
			missing[name] = fmt.Sprintf("(mapped from %q); fix the row or change dataset.fields.%s", l.spec.Fields[name], name)
			continue
		}
		vals[i] = v
	}
	for i, name := range l.fields {
		if _, gone := missing[name]; !gone {
			rec[name] = vals[i]
		}
	}
	for _, name := range l.types {
		v, ok := rec[name]
		if !ok {
			if _, gone := missing[name]; !gone {
				missing[name] = fmt.Sprintf("(listed in dataset.types); fix the row or remove dataset.types.%s", name)
			}
			continue
		}
		c, err := convert(v, l.spec.Types[name])
		if err != nil {
			return l.src.errf(n, name, "field %q: %v; fix the value or change dataset.types.%s", name, err, name)
		}
		rec[name] = c
	}
	id, err := l.rowID(n, rec)
	if err != nil {
		return err
	}
	if n >= math.MaxInt32 {
		// Rows keep their number in 4 bytes, and seen their place in
		// 31 bits.
		return l.src.errf(n, "", "the file has more than %d rows; split it", math.MaxInt32-1)
	}
	prev, dup, slot := l.seen.find(id)
	if dup {
		return l.src.errf(n, "", "id %q is also the id of row %d; ids must be unique: fix the data or choose another dataset.id / id_columns", id, prev)
	}
	// A row dropped by filter or exclude keeps its id in seen.
	drop := func() {
		l.seen.add(slot, uint32(len(l.droppedIDs))<<1|1)
		l.droppedIDs = append(l.droppedIDs, droppedID{id, int32(n)})
	}
	if l.filter != nil {
		keep, err := l.filter.keep(rec)
		if err != nil {
			return l.src.errf(n, "", "%v", err)
		}
		if !keep {
			drop()
			return nil
		}
	}
	if len(missing) > 0 {
		name := slices.Sorted(maps.Keys(missing))[0]
		return l.src.errf(n, name, "field %q is missing %s", name, missing[name])
	}
	if l.exclude != nil {
		f := l.spec.Exclude.Field
		v, ok := rec[f]
		if !ok {
			return l.src.errf(n, f, "field %q is missing (named by dataset.exclude.field); fix the row or change exclude.field", f)
		}
		if key, ok := scalarString(v); ok && l.exclude[key] {
			l.dropped++
			drop()
			return nil
		}
	}
	l.seen.add(slot, uint32(l.rows.n)<<1)
	return l.spill(l.rows.push(row{n: int32(n), id: id, rec: rec}))
}

// spill moves the rows' fields to the store once they grow too large to
// keep: every row kept so far, then each new one.
func (l *loader) spill(last *row) error {
	if l.store == nil {
		return nil
	}
	if !l.spilling {
		if l.resident += sizeOf(last.rec); l.resident <= SpillAbove {
			return nil
		}
		l.spilling = true
		for i := range l.rows.n {
			if err := l.put(l.rows.at(i)); err != nil {
				return err
			}
		}
		return nil
	}
	return l.put(last)
}

func (l *loader) put(r *row) error {
	ref, ok, err := l.store.Put(r.rec)
	if err != nil {
		return l.src.errf(0, "", "%v", err)
	}
	if ok {
		if l.digest != nil && l.spec.Expand == nil && l.spec.Shuffle == nil {
			r.digest = l.digest(r.rec) // these are the item's final fields
		}
		r.rec, r.ref = nil, ref
	}
	return nil
}

// fields are a row's fields, read back from the store if spilled.
func (l *loader) fieldsOf(r row) (map[string]any, error) {
	if r.rec != nil || r.ref.IsZero() {
		return r.rec, nil
	}
	m, err := l.store.Get(r.ref)
	if err != nil {
		return nil, l.src.errf(int(r.n), "", "%v", err)
	}
	return m, nil
}

// item makes an item of fields, spilling them when the dataset spills.
func (l *loader) item(id string, n int, f map[string]any) (Item, error) {
	it := Item{ID: id, Row: n, Fields: f}
	if !l.spilling {
		return it, nil
	}
	ref, ok, err := l.store.Put(f)
	if err != nil {
		return it, l.src.errf(n, "", "%v", err)
	}
	if ok {
		if l.digest != nil {
			it.Digest = l.digest(f)
		}
		it.Fields, it.Ref = nil, ref
	}
	return it, nil
}

func (l *loader) rowID(n int, rec map[string]any) (string, error) {
	part := func(col, knob string) (string, error) {
		v, ok := lookup(rec, col)
		if !ok {
			return "", l.src.errf(n, col, "id column %q is missing; fix the row or change dataset.%s", col, knob)
		}
		s, ok := scalarString(v)
		if !ok || s == "" {
			return "", l.src.errf(n, col, "id column %q is %s; ids must be non-empty strings or numbers", col, describe(v))
		}
		return s, nil
	}
	switch {
	case l.spec.ID != "":
		return part(l.spec.ID, "id")
	case len(l.spec.IDColumns) > 0:
		parts := make([]string, len(l.spec.IDColumns))
		for i, c := range l.spec.IDColumns {
			s, err := part(c, "id_columns")
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ":"), nil
	}
	return l.stem + ":" + strconv.Itoa(n), nil
}

// finish applies limit, sample, expand and shuffle to the kept rows and
// hands the items to each, in order.
func (l *loader) finish(each func(i, n int, it Item)) error {
	s := l.spec
	l.seen, l.droppedIDs = nil, nil // duplicates are found; the ids live on in the rows
	if l.rows.n == 0 {
		switch {
		case l.filter != nil && l.dropped == 0:
			return l.src.errf(0, "", "filter `%s` kept none of the %d rows; check the field names and values it compares (strings are case-sensitive)", s.Filter, l.total)
		case l.dropped > 0:
			return l.src.errf(0, "", "dataset.exclude removed all %d remaining rows; check exclude.path and exclude.field", l.dropped)
		}
		return l.src.errf(0, "", "contains no rows")
	}
	n := l.rows.n
	if s.Limit > 0 && n > s.Limit {
		n = s.Limit
	}
	if s.Sample == nil && s.Expand == nil {
		// The common case: each row is an item. Rows become items one
		// chunk at a time, and each chunk is freed once handed on.
		for i := range n {
			r := l.rows.at(i)
			it := Item{ID: r.id, Row: int(r.n), Fields: r.rec, Ref: r.ref, Digest: r.digest}
			if err := l.shuffle(&it); err != nil {
				return err
			}
			each(i, n, it)
			if (i+1)%rowChunk == 0 {
				l.rows.chunks[i/rowChunk] = nil
			}
		}
		l.rows = rowList{}
		return nil
	}
	rows := l.rows.slice(n)
	l.rows = rowList{}
	if sm := s.Sample; sm != nil {
		// An explicit sample size that cannot be met would silently change
		// a study's n, so it is an error rather than a clamp.
		if sm.N > len(rows) {
			return l.src.errf(0, "", "dataset.sample.n is %d but only %d rows remain after filter, exclude and limit; lower sample.n", sm.N, len(rows))
		}
		rows = sampleRows(rows, sm.N, sm.Seed)
	}
	var items []Item
	if x := s.Expand; x != nil {
		var err error
		if items, err = l.expand(rows, x); err != nil {
			return err
		}
	} else {
		items = make([]Item, len(rows))
		for i, r := range rows {
			items[i] = Item{ID: r.id, Row: int(r.n), Fields: r.rec, Ref: r.ref, Digest: r.digest}
		}
	}
	for i := range items {
		if err := l.shuffle(&items[i]); err != nil {
			return err
		}
	}
	for i, it := range items {
		each(i, len(items), it)
	}
	return nil
}

// shuffle applies dataset.shuffle, if any, to one item.
func (l *loader) shuffle(it *Item) error {
	sh := l.spec.Shuffle
	if sh == nil {
		return nil
	}
	f, err := l.fieldsOf(row{n: int32(it.Row), rec: it.Fields, ref: it.Ref})
	if err != nil {
		return err
	}
	it.Fields = f
	if err := shuffleItem(it, sh); err != nil {
		return l.src.errf(it.Row, "", "item %q: %v", it.ID, err)
	}
	*it, err = l.item(it.ID, it.Row, it.Fields)
	return err
}

func (l *loader) expand(rows []row, x *Expand) ([]Item, error) {
	as, link := or(x.As, DefaultExpandAs), or(x.Link, DefaultLink)
	items := make([]Item, 0, len(rows)*len(x.Variants))
	seen := make(map[string]int, cap(items))
	for _, r := range rows {
		rec, err := l.fieldsOf(r)
		if err != nil {
			return nil, err
		}
		r.rec = rec
		for vi, v := range x.Variants {
			f := maps.Clone(r.rec)
			for _, name := range slices.Sorted(maps.Keys(v.Fields)) {
				col := v.Fields[name]
				val, ok := lookup(r.rec, col)
				if !ok {
					return nil, l.src.errf(int(r.n), name, "field %q of variant %q is missing (mapped from %q); fix the row or change dataset.expand.variants[%d].fields.%s", name, v.Name, col, vi, name)
				}
				f[name] = val
			}
			f[as] = v.Name
			f[link] = r.id
			id := r.id + ":" + v.Name
			if prev, dup := seen[id]; dup {
				return nil, l.src.errf(int(r.n), "", "expanded id %q collides with one from row %d; row ids must not end in \":<variant name>\"", id, prev)
			}
			seen[id] = int(r.n)
			it, err := l.item(id, int(r.n), f)
			if err != nil {
				return nil, err
			}
			items = append(items, it)
		}
	}
	return items, nil
}

// excludeSet reads the column named by ex from the other file.
func excludeSet(ex *Exclude, baseDir string) (map[string]bool, error) {
	path := resolve(ex.Path, baseDir)
	col := or(ex.Column, ex.Field)
	src := source{path}
	set := map[string]bool{}
	_, err := readFile(path, fileFormat(ex.Format, ex.Path), "exclude.path", baseDir, func(n int, rec map[string]any) error {
		v, ok := lookup(rec, col)
		if !ok {
			return src.errf(n, col, "column %q is missing (named by dataset.exclude.column or exclude.field); fix the row or change exclude.column", col)
		}
		if s, ok := scalarString(v); ok {
			set[s] = true
		}
		return nil
	})
	return set, err
}
