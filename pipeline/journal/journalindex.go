package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/bits"
)

// replyIndex finds a reply's line in the journal by its key, in 16 to 24
// bytes per reply whatever the replies hold: a table of the key's first 4
// bytes (its tag) and the line's offset and length packed in 8 more, at
// most three quarters full. A key whose tag another key already holds goes
// to a small map by the whole key (about one key in 4,000 at 1,000,000
// replies); a lookup reads the line's own key back and serves it only if it
// matches (Journal.Lookup), so a shared tag can never serve the wrong reply.
type replyIndex struct {
	tab  tagTable
	long map[[32]byte]span
	// keyAt reads the key of the line at a span, to tell a reply that
	// replaces an earlier one for the same key from another key with the
	// same tag.
	keyAt func(span) ([32]byte, bool)
}

const (
	spanLenBits = 26 // lines up to 64 MiB (MaxLine is 32 MiB)
	spanOffBits = 64 - spanLenBits
)

func newReplyIndex(keyAt func(span) ([32]byte, bool)) *replyIndex {
	return &replyIndex{long: map[[32]byte]span{}, keyAt: keyAt}
}

func tagOf(k [32]byte) uint32 { return binary.LittleEndian.Uint32(k[:4]) }

// packSpan packs a span into a non-zero word (0 marks an empty slot).
func packSpan(sp span) (uint64, bool) {
	if sp.off < 0 || sp.off >= 1<<spanOffBits || sp.n <= 0 || int64(sp.n) >= 1<<spanLenBits {
		return 0, false
	}
	return uint64(sp.off)<<spanLenBits | uint64(sp.n), true
}

func unpackSpan(p uint64) span {
	return span{off: int64(p >> spanLenBits), n: int32(p & (1<<spanLenBits - 1))}
}

// reserve makes room for n more replies without the table growing.
func (x *replyIndex) reserve(n int) { x.tab.reserve(x.tab.n + n) }

// put records the latest reply line of key k.
func (x *replyIndex) put(k [32]byte, sp span) {
	if _, ok := x.long[k]; ok {
		x.long[k] = sp
		return
	}
	t := tagOf(k)
	packed, fits := packSpan(sp)
	i, found := x.tab.find(t)
	if found {
		if ck, ok := x.keyAt(unpackSpan(x.tab.vals[i])); !ok || ck != k {
			x.long[k] = sp // another key holds the tag
			return
		}
		if !fits {
			x.tab.remove(i)
			x.long[k] = sp
			return
		}
		x.tab.vals[i] = packed
		return
	}
	if !fits {
		x.long[k] = sp
		return
	}
	x.tab.insert(i, t, packed)
}

// get is the span indexed for k's tag, or for k itself: the line's own key
// must be checked before its reply is used.
func (x *replyIndex) get(k [32]byte) (span, bool) {
	if sp, ok := x.long[k]; ok {
		return sp, true
	}
	i, ok := x.tab.find(tagOf(k))
	if !ok {
		return span{}, false
	}
	return unpackSpan(x.tab.vals[i]), true
}

// drop removes k's entry if it still points at sp.
func (x *replyIndex) drop(k [32]byte, sp span) bool {
	if cur, ok := x.long[k]; ok {
		if cur != sp {
			return false
		}
		delete(x.long, k)
		return true
	}
	if i, ok := x.tab.find(tagOf(k)); ok && unpackSpan(x.tab.vals[i]) == sp {
		x.tab.remove(i)
		return true
	}
	return false
}

func (x *replyIndex) len() int { return x.tab.n + len(x.long) }

// tagTable is an open-addressing table of distinct 32-bit tags and non-zero
// values, probed linearly from the tag's home slot, tag × size / 2³² (so the
// slots keep the tags' order and growing reads the old table front to
// back). It grows by half when three quarters full: 12 bytes a slot, 16 to
// 24 bytes a tag, where a Go map of 8-byte keys to 8-byte values took about
// 40 at 1,000,000.
type tagTable struct {
	tags []uint32
	vals []uint64 // 0: the slot is empty
	n    int
}

func (t *tagTable) home(tag uint32) int {
	hi, _ := bits.Mul64(uint64(tag)<<32, uint64(len(t.vals)))
	return int(hi)
}

// find is the slot holding tag, or the empty slot where it would go.
func (t *tagTable) find(tag uint32) (int, bool) {
	if len(t.vals) == 0 {
		return -1, false
	}
	i := t.home(tag)
	for {
		if t.vals[i] == 0 {
			return i, false
		}
		if t.tags[i] == tag {
			return i, true
		}
		if i++; i == len(t.vals) {
			i = 0
		}
	}
}

// insert puts tag at the empty slot find gave (-1 for an empty table).
func (t *tagTable) insert(i int, tag uint32, v uint64) {
	if i < 0 || (t.n+1)*4 > len(t.vals)*3 {
		t.reserve(t.n + 1)
		i, _ = t.find(tag)
	}
	t.tags[i], t.vals[i] = tag, v
	t.n++
}

// remove empties slot i and moves back the entries after it that probed
// past it, so every entry stays reachable from its home.
func (t *tagTable) remove(i int) {
	size := len(t.vals)
	for j := i; ; {
		if j++; j == size {
			j = 0
		}
		if t.vals[j] == 0 {
			break
		}
		// Entry j stays if its home lies cyclically in (i, j].
		h := t.home(t.tags[j])
		if (i < j && i < h && h <= j) || (i > j && (i < h || h <= j)) {
			continue
		}
		t.tags[i], t.vals[i] = t.tags[j], t.vals[j]
		i = j
	}
	t.vals[i] = 0
	t.n--
}

// reserve grows the table to hold n tags at most three quarters full.
func (t *tagTable) reserve(n int) {
	if n*4 <= len(t.vals)*3 {
		return
	}
	size := max(64, len(t.vals)+len(t.vals)/2)
	if n*4 > size*3 {
		size = n*4/3 + 1
	}
	old := *t
	*t = tagTable{tags: make([]uint32, size), vals: make([]uint64, size)}
	for i, v := range old.vals {
		if v != 0 {
			j, _ := t.find(old.tags[i])
			t.tags[j], t.vals[j] = old.tags[i], v
			t.n++
		}
	}
}

// lineKey reads the key of a journal line: at its start, where Append
// writes it, or, for a line in another form (re-spaced, its keys
// reordered: edited by hand or by another tool), by decoding it.
func lineKey(line []byte) ([32]byte, bool) {
	var k [32]byte
	key, _, ok := lineHead(line)
	if !ok {
		return slowKey(line)
	}
	if _, err := hex.Decode(k[:], key); err != nil {
		return k, false
	}
	return k, true
}

// slowKey decodes a whole line for its key.
func slowKey(line []byte) ([32]byte, bool) {
	var k [32]byte
	var p struct {
		K string `json:"k"`
	}
	if json.Unmarshal(line, &p) != nil || len(p.K) != 64 {
		return k, false
	}
	if _, err := hex.Decode(k[:], []byte(p.K)); err != nil {
		return k, false
	}
	return k, true
}

// keyMatches says the line at the head of buf is k's.
func keyMatches(buf []byte, k [32]byte) bool {
	got, ok := lineKey(buf)
	return ok && bytes.Equal(got[:], k[:])
}
