package dataset

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// A dataset of a million items does not fit in memory as maps: its items
// keep their fields in a Store, a temporary file written once at load and
// read back one item at a time, when a case needs its fields. Small
// datasets stay in memory (SpillAbove).

// SpillAbove is the estimated size in bytes of a dataset's fields beyond
// which Load moves them to the Store, when it is given one: a few thousand
// items of ordinary size stay in memory, the recorded replies of a study do
// not.
var SpillAbove int64 = 8 << 20

// Store holds spilled item fields in an unlinked temporary file, so nothing
// is left behind however the process ends.
type Store struct {
	mu   sync.Mutex
	f    *os.File
	size int64
	// pending holds the encoded puts from byte written on, not yet in the
	// file: one write a chunk instead of a system call an item.
	pending []byte
	written atomic.Int64
}

// storeChunk is how much Put gathers before it writes.
const storeChunk = 1 << 20

// Ref locates one item's fields in a Store; the zero Ref is none. It is
// one word, the offset and the length packed (a million items hold one
// each): an item of more than refMaxLen bytes, or past refMaxOff, stays in
// memory instead (Put's ok is false).
type Ref struct{ v uint64 }

const (
	refLenBits = 24
	refMaxLen  = 1<<refLenBits - 1      // 16 MiB
	refMaxOff  = 1<<(64-refLenBits) - 1 // 1 TiB
)

func makeRef(off int64, n uint32) Ref { return Ref{uint64(off)<<refLenBits | uint64(n)} }

func (r Ref) off() int64 { return int64(r.v >> refLenBits) }
func (r Ref) len() int   { return int(r.v & refMaxLen) }

// IsZero says the item's fields are not in a store.
func (r Ref) IsZero() bool { return r.v == 0 }

// NewStore makes a store; its file, in the temporary folder (TMPDIR), is
// created when the first item goes in.
func NewStore() (*Store, error) { return &Store{}, nil }

// Close releases the file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// Put stores fields; ok is false for a value the store cannot keep
// exactly (the item then stays in memory).
func (s *Store) Put(fields map[string]any) (Ref, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		f, err := os.CreateTemp("", "promoral-items-*")
		if err != nil {
			return Ref{}, false, fmt.Errorf("cannot create a file for the items (set TMPDIR to a writable folder): %w", err)
		}
		os.Remove(f.Name()) // it lives on until closed
		s.f = f
	}
	start := len(s.pending)
	b, ok := appendValue(s.pending, fields)
	n := len(b) - start
	if !ok || n > refMaxLen || s.size > refMaxOff {
		s.pending = b[:start]
		return Ref{}, false, nil
	}
	s.pending = b
	r := makeRef(s.size, uint32(n))
	s.size += int64(n)
	if len(s.pending) >= storeChunk {
		if err := s.flushLocked(); err != nil {
			return Ref{}, false, err
		}
	}
	return r, true, nil
}

// Flush writes what Put gathered, so a failing disk is reported by the
// load, not by the first item read back. It ends a load (or serves a read
// of items not written yet), so the gathering buffer goes with it: kept,
// its megabyte stayed live for the whole apply after the last Put.
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.flushLocked()
	if err == nil {
		s.pending = nil
	}
	return err
}

func (s *Store) flushLocked() error {
	if len(s.pending) == 0 || s.f == nil {
		return nil
	}
	w := s.written.Load()
	if _, err := s.f.WriteAt(s.pending, w); err != nil {
		return fmt.Errorf("cannot write the items' file: %w", err)
	}
	s.written.Store(w + int64(len(s.pending)))
	s.pending = s.pending[:0]
	return nil
}

// Get reads an item's fields back.
func (s *Store) Get(r Ref) (map[string]any, error) {
	if r.off()+int64(r.len()) > s.written.Load() {
		// Gathered by Put and not written yet (a read during the load).
		if err := s.Flush(); err != nil {
			return nil, err
		}
	}
	// b is never written after the read below: the fields' strings point
	// into it (readString).
	b := make([]byte, r.len())
	if s.f == nil {
		return nil, fmt.Errorf("the items' file is closed")
	}
	if _, err := s.f.ReadAt(b, r.off()); err != nil {
		return nil, fmt.Errorf("cannot read the items' file back: %w", err)
	}
	v, rest, err := readValue(b)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes too many", len(rest))
	}
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, fmt.Errorf("the items' file is damaged at byte %d: %v", r.off(), err)
	}
	return m, nil
}

// The encoding keeps every Go type Load produces (int and float64 apart,
// []string apart from []any), so an item reads back as it was loaded.
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt
	tagFloat
	tagString
	tagList
	tagStrings
	tagMap
)

func appendValue(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, tagNil), true
	case bool:
		if x {
			return append(b, tagTrue), true
		}
		return append(b, tagFalse), true
	case int:
		return binary.AppendVarint(append(b, tagInt), int64(x)), true
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(x)), true
	case string:
		return appendString(append(b, tagString), x), true
	case []string:
		b = binary.AppendUvarint(append(b, tagStrings), uint64(len(x)))
		for _, s := range x {
			b = appendString(b, s)
		}
		return b, true
	case []any:
		b = binary.AppendUvarint(append(b, tagList), uint64(len(x)))
		for _, e := range x {
			var ok bool
			if b, ok = appendValue(b, e); !ok {
				return b, false
			}
		}
		return b, true
	case map[string]any:
		b = binary.AppendUvarint(append(b, tagMap), uint64(len(x)))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendString(b, k)
			var ok bool
			if b, ok = appendValue(b, x[k]); !ok {
				return b, false
			}
		}
		return b, true
	}
	return b, false
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func readValue(b []byte) (any, []byte, error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("truncated")
	}
	tag, b := b[0], b[1:]
	switch tag {
	case tagNil:
		return nil, b, nil
	case tagFalse:
		return false, b, nil
	case tagTrue:
		return true, b, nil
	case tagInt:
		i, n := binary.Varint(b)
		if n <= 0 {
			return nil, nil, fmt.Errorf("bad int")
		}
		return int(i), b[n:], nil
	case tagFloat:
		if len(b) < 8 {
			return nil, nil, fmt.Errorf("truncated float")
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:], nil
	case tagString:
		return readString(b)
	case tagStrings, tagList, tagMap:
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return nil, nil, fmt.Errorf("bad length")
		}
		b = b[k:]
		switch tag {
		case tagStrings:
			out := make([]string, n)
			for i := range out {
				s, rest, err := readString(b)
				if err != nil {
					return nil, nil, err
				}
				out[i], b = s.(string), rest
			}
			return out, b, nil
		case tagList:
			out := make([]any, n)
			for i := range out {
				v, rest, err := readValue(b)
				if err != nil {
					return nil, nil, err
				}
				out[i], b = v, rest
			}
			return out, b, nil
		}
		out := make(map[string]any, n)
		for range n {
			k, rest, err := readString(b)
			if err != nil {
				return nil, nil, err
			}
			v, rest, err := readValue(rest)
			if err != nil {
				return nil, nil, err
			}
			out[k.(string)], b = v, rest
		}
		return out, b, nil
	}
	return nil, nil, fmt.Errorf("unknown tag %d", tag)
}

// readString reads a string in place: b is a buffer of Get's own that
// nothing writes to once read, so its strings are views of it, not copies
// (one allocation for an item's text, not one per field).
func readString(b []byte) (any, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("bad string")
	}
	if n == 0 {
		return "", b[k:], nil
	}
	return unsafe.String(&b[k], int(n)), b[k+int(n):], nil
}

// sizeOf estimates the memory a value takes as loaded.
func sizeOf(v any) int64 {
	switch x := v.(type) {
	case string:
		return 16 + int64(len(x))
	case []string:
		n := int64(24)
		for _, s := range x {
			n += 16 + int64(len(s))
		}
		return n
	case []any:
		n := int64(24)
		for _, e := range x {
			n += 16 + sizeOf(e)
		}
		return n
	case map[string]any:
		// A map costs about 64 bytes a slot, and each key a string of its
		// own as decoded.
		n := int64(48)
		for k, e := range x {
			n += 64 + int64(len(k)) + sizeOf(e)
		}
		return n
	}
	return 16 // boxed in an interface
}
