package pipeline

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
)

// replyIndex finds a reply's line in the journal by its key, in about 20
// bytes per reply whatever the replies hold: the key's first 8 bytes map to
// the line's offset and length packed in 8 more. A key whose 8 bytes another
// key already holds goes to a small map by the whole key; a lookup reads the
// line's own key back and serves it only if it matches (Journal.Lookup), so
// a shared prefix can never serve the wrong reply.
type replyIndex struct {
	short map[uint64]uint64
	long  map[[32]byte]span
	// keyAt reads the key of the line at a span, to tell a reply that
	// replaces an earlier one for the same key from another key with the
	// same prefix.
	keyAt func(span) ([32]byte, bool)
}

const (
	spanLenBits = 26 // lines up to 64 MiB (MaxJournalLine is 32 MiB)
	spanOffBits = 64 - spanLenBits
)

func newReplyIndex(keyAt func(span) ([32]byte, bool)) *replyIndex {
	return &replyIndex{short: map[uint64]uint64{}, long: map[[32]byte]span{}, keyAt: keyAt}
}

func prefixOf(k [32]byte) uint64 { return binary.LittleEndian.Uint64(k[:8]) }

func packSpan(sp span) (uint64, bool) {
	if sp.off < 0 || sp.off >= 1<<spanOffBits || sp.n <= 0 || int64(sp.n) >= 1<<spanLenBits {
		return 0, false
	}
	return uint64(sp.off)<<spanLenBits | uint64(sp.n), true
}

func unpackSpan(p uint64) span {
	return span{off: int64(p >> spanLenBits), n: int32(p & (1<<spanLenBits - 1))}
}

// put records the latest reply line of key k.
func (x *replyIndex) put(k [32]byte, sp span) {
	if _, ok := x.long[k]; ok {
		x.long[k] = sp
		return
	}
	p := prefixOf(k)
	packed, fits := packSpan(sp)
	if cur, taken := x.short[p]; taken {
		if ck, ok := x.keyAt(unpackSpan(cur)); !ok || ck != k {
			x.long[k] = sp // another key holds the prefix
			return
		}
	}
	if !fits {
		delete(x.short, p)
		x.long[k] = sp
		return
	}
	x.short[p] = packed
}

// get is the span indexed for k's prefix, or for k itself: the line's own
// key must be checked before its reply is used.
func (x *replyIndex) get(k [32]byte) (span, bool) {
	if sp, ok := x.long[k]; ok {
		return sp, true
	}
	p, ok := x.short[prefixOf(k)]
	return unpackSpan(p), ok
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
	p := prefixOf(k)
	if cur, ok := x.short[p]; ok && unpackSpan(cur) == sp {
		delete(x.short, p)
		return true
	}
	return false
}

func (x *replyIndex) len() int { return len(x.short) + len(x.long) }

// lineKey reads the key at the start of a journal line.
func lineKey(line []byte) ([32]byte, bool) {
	var k [32]byte
	key, _, ok := lineHead(line)
	if !ok {
		return k, false
	}
	if _, err := hex.Decode(k[:], key); err != nil {
		return k, false
	}
	return k, true
}

// keyMatches says the line at the head of buf is k's.
func keyMatches(buf []byte, k [32]byte) bool {
	got, ok := lineKey(buf)
	return ok && bytes.Equal(got[:], k[:])
}
