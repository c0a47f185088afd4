package engine

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/promoral/promoral/pipeline/parquetio"
)

// caseSpool gives out rows keyed by case ordinal in case order, whatever
// order they come in: results.parquet and calls.parquet are written in case
// order, so two applies of one study write the same files. A case's rows
// come in one put; the rows of every case before it must have come (or the
// case be skipped: not this apply's, taken from an earlier one) before they
// go out. Rows waiting for an earlier case are held in memory up to
// spoolCases cases or spoolBytes of text, whichever comes first; past that
// every waiting row is written to a spill file beside the output (one
// record per case, its place in an index of 8 bytes per case, made at the
// first spill), and read back when its turn comes.
type caseSpool struct {
	planned int
	// skip marks the cases that have no rows here.
	skip func(ord int) bool
	// out writes one case's rows, in case order.
	out func(ord int, rows [][]any) error

	got      doneSet
	next     int
	mem      spoolHeap
	memBytes int

	dir    string
	spill  *os.File
	w      *bufio.Writer
	at     []int64 // 1 + the offset of each spilled case's record; 0 for none
	end    int64
	buf    []byte
	spills int // how many times the held rows went to the spill file
}

// The bound of the rows held in memory waiting for an earlier case, per
// file written. Cases of several models run side by side, so in a study of
// more than one model the rows of the later models wait for the first's:
// past this, they wait on disk.
var (
	spoolCases = 1024
	spoolBytes = 8 << 20
)

func newCaseSpool(dir string, planned int, skip func(int) bool, out func(int, [][]any) error) *caseSpool {
	return &caseSpool{planned: planned, skip: skip, out: out, got: newDoneSet(planned), dir: dir}
}

type spoolEntry struct {
	ord   int
	rows  [][]any
	bytes int
}

type spoolHeap []spoolEntry

func (h spoolHeap) Len() int           { return len(h) }
func (h spoolHeap) Less(i, j int) bool { return h[i].ord < h[j].ord }
func (h spoolHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *spoolHeap) Push(x any)        { *h = append(*h, x.(spoolEntry)) }
func (h *spoolHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = spoolEntry{}
	*h = old[:len(old)-1]
	return x
}

// put adds case ord's rows and writes out whatever is now next in order.
func (s *caseSpool) put(ord int, rows [][]any) error {
	if ord < 0 || ord >= s.planned || s.got.has(ord) {
		return fmt.Errorf("case %d: rows given twice or out of range (%d cases)", ord, s.planned)
	}
	s.got.mark(ord)
	n := 0
	for _, r := range rows {
		n += rowBytes(r)
	}
	heap.Push(&s.mem, spoolEntry{ord, rows, n})
	s.memBytes += n
	if err := s.drain(false); err != nil {
		return err
	}
	if s.mem.Len() > spoolCases || s.memBytes > spoolBytes {
		return s.spillHeld()
	}
	return nil
}

// drain writes the cases next in order that are in; with all, every case
// that is in, passing over those that never came.
func (s *caseSpool) drain(all bool) error {
	for s.next < s.planned {
		o := s.next
		if s.skip != nil && s.skip(o) || !s.got.has(o) {
			if !all && (s.skip == nil || !s.skip(o)) {
				return nil
			}
			s.next++
			continue
		}
		rows, err := s.take(o)
		if err != nil {
			return err
		}
		if err := s.out(o, rows); err != nil {
			return err
		}
		s.next++
	}
	return nil
}

// take is case o's rows, from memory or the spill file.
func (s *caseSpool) take(o int) ([][]any, error) {
	if s.mem.Len() > 0 && s.mem[0].ord == o {
		e := heap.Pop(&s.mem).(spoolEntry)
		s.memBytes -= e.bytes
		return e.rows, nil
	}
	if s.at == nil || s.at[o] == 0 {
		return nil, fmt.Errorf("case %d: its rows are neither held nor spilled", o)
	}
	off := s.at[o] - 1
	var hdr [4]byte
	if _, err := s.spill.ReadAt(hdr[:], off); err != nil {
		return nil, fmt.Errorf("reading back the rows of case %d: %w", o, err)
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if cap(s.buf) < int(n) {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	if _, err := s.spill.ReadAt(b, off+4); err != nil {
		return nil, fmt.Errorf("reading back the rows of case %d: %w", o, err)
	}
	s.at[o] = 0
	return decodeRows(b)
}

// spillHeld writes every held case's rows to the spill file.
func (s *caseSpool) spillHeld() error {
	if s.spill == nil {
		f, err := os.CreateTemp(s.dir, ".spill-*"+parquetio.TmpMark)
		if err != nil {
			return fmt.Errorf("cannot hold rows waiting for earlier cases: %w", err)
		}
		s.spill, s.w = f, bufio.NewWriterSize(f, 1<<16)
		s.at = make([]int64, s.planned)
	}
	s.spills++
	for s.mem.Len() > 0 {
		e := heap.Pop(&s.mem).(spoolEntry)
		b := encodeRows(s.buf[:0], e.rows)
		s.buf = b[:0]
		var hdr [4]byte
		if len(b) > math.MaxUint32 {
			return fmt.Errorf("case %d: rows of %d bytes are too large to hold", e.ord, len(b))
		}
		binary.LittleEndian.PutUint32(hdr[:], uint32(len(b)))
		s.w.Write(hdr[:])
		if _, err := s.w.Write(b); err != nil {
			return fmt.Errorf("cannot hold rows waiting for earlier cases: %w", err)
		}
		s.at[e.ord] = s.end + 1
		s.end += int64(4 + len(b))
	}
	s.memBytes = 0
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("cannot hold rows waiting for earlier cases: %w", err)
	}
	return nil
}

// finish writes every case still waiting, in case order, and removes the
// spill file.
func (s *caseSpool) finish() error {
	err := s.drain(true)
	s.close()
	return err
}

// close drops what is held and the spill file.
func (s *caseSpool) close() {
	s.mem = nil
	if s.spill != nil {
		s.spill.Close()
		os.Remove(s.spill.Name())
		s.spill, s.at = nil, nil
	}
}

// rowBytes estimates what a row holds: its text and a word per value.
func rowBytes(r []any) int {
	n := 0
	for _, v := range r {
		n += 16
		if s, ok := v.(string); ok {
			n += len(s)
		}
	}
	return n
}

// The spill file's value tags. A row's values are those parquetio.Writer
// and resultsWriter take; a list or an object (a flat column's value) is
// kept as its JSON text, which is what a results column holding one writes
// (every such column is a string column).
const (
	tagNull byte = iota
	tagString
	tagInt
	tagFloat
	tagFalse
	tagTrue
	tagTime
)

func encodeRows(b []byte, rows [][]any) []byte {
	b = binary.AppendUvarint(b, uint64(len(rows)))
	for _, r := range rows {
		b = binary.AppendUvarint(b, uint64(len(r)))
		for _, v := range r {
			b = encodeValue(b, v)
		}
	}
	return b
}

func encodeValue(b []byte, v any) []byte {
	str := func(s string) []byte {
		b = append(b, tagString)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	num := func(n int64) []byte { return binary.AppendVarint(append(b, tagInt), n) }
	flt := func(f float64) []byte {
		return binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(f))
	}
	flag := func(x bool) []byte {
		if x {
			return append(b, tagTrue)
		}
		return append(b, tagFalse)
	}
	switch x := v.(type) {
	case nil:
		return append(b, tagNull)
	case string:
		return str(x)
	case *string:
		if x == nil {
			return append(b, tagNull)
		}
		return str(*x)
	case int:
		return num(int64(x))
	case int32:
		return num(int64(x))
	case int64:
		return num(x)
	case *int64:
		if x == nil {
			return append(b, tagNull)
		}
		return num(*x)
	case float64:
		return flt(x)
	case *float64:
		if x == nil {
			return append(b, tagNull)
		}
		return flt(*x)
	case bool:
		return flag(x)
	case *bool:
		if x == nil {
			return append(b, tagNull)
		}
		return flag(*x)
	case time.Time:
		return binary.AppendVarint(append(b, tagTime), x.UnixNano())
	}
	return str(string(appendTraceValue(nil, v, false)))
}

func decodeRows(b []byte) ([][]any, error) {
	bad := fmt.Errorf("the spill file holds a damaged record")
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, bad
	}
	b = b[k:]
	rows := make([][]any, n)
	for i := range rows {
		m, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, bad
		}
		b = b[k:]
		r := make([]any, m)
		for j := range r {
			if len(b) == 0 {
				return nil, bad
			}
			tag := b[0]
			b = b[1:]
			switch tag {
			case tagNull:
			case tagString:
				l, k := binary.Uvarint(b)
				if k <= 0 || uint64(len(b)-k) < l {
					return nil, bad
				}
				r[j] = string(b[k : k+int(l)])
				b = b[k+int(l):]
			case tagInt, tagTime:
				x, k := binary.Varint(b)
				if k <= 0 {
					return nil, bad
				}
				b = b[k:]
				if tag == tagTime {
					r[j] = time.Unix(0, x).UTC()
				} else {
					r[j] = x
				}
			case tagFloat:
				if len(b) < 8 {
					return nil, bad
				}
				r[j] = math.Float64frombits(binary.LittleEndian.Uint64(b))
				b = b[8:]
			case tagFalse, tagTrue:
				r[j] = tag == tagTrue
			default:
				return nil, bad
			}
		}
		rows[i] = r
	}
	if len(b) != 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return rows, nil
}
