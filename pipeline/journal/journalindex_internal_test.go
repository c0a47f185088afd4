package journal

import (
	"math/rand/v2"
	"testing"
)

// The tag table agrees with a map through random inserts, replacements and
// removals, across its growth, with tags crowded into a few homes (so probes
// wrap past the end and removals move entries back) and spread out.
func TestTagTableAgreesWithAMap(t *testing.T) {
	for _, spread := range []uint32{1 << 20, 0} { // 0: the whole 32 bits
		rng := rand.New(rand.NewPCG(1, uint64(spread)))
		var tab tagTable
		want := map[uint32]uint64{}
		draw := func() uint32 {
			if spread == 0 {
				return rng.Uint32()
			}
			// High tags crowd the last slots: their probes wrap to slot 0.
			return ^uint32(0) - rng.Uint32N(spread)
		}
		for step := 0; step < 200_000; step++ {
			tag := draw()
			i, found := tab.find(tag)
			_, in := want[tag]
			if found != in {
				t.Fatalf("step %d: tag %d found %v, the map says %v", step, tag, found, in)
			}
			switch {
			case found && rng.IntN(3) == 0:
				tab.remove(i)
				delete(want, tag)
			case found:
				v := rng.Uint64() | 1
				tab.vals[i] = v
				want[tag] = v
			case rng.IntN(4) != 0:
				v := rng.Uint64() | 1
				tab.insert(i, tag, v)
				want[tag] = v
			}
			if tab.n != len(want) {
				t.Fatalf("step %d: the table holds %d, the map %d", step, tab.n, len(want))
			}
		}
		if tab.n*4 > len(tab.vals)*3 {
			t.Errorf("%d tags in %d slots: over three quarters full", tab.n, len(tab.vals))
		}
		for tag, v := range want {
			if i, ok := tab.find(tag); !ok || tab.vals[i] != v {
				t.Fatalf("tag %d: found %v, want value %d", tag, ok, v)
			}
		}
	}
}

// Keys whose first 4 bytes agree each keep their own span: the later ones go
// to the map by the whole key, found through keyAt; replacing and dropping
// one leaves the others.
func TestReplyIndexKeysSharingATag(t *testing.T) {
	keyOf := map[span][32]byte{}
	x := newReplyIndex(func(sp span) ([32]byte, bool) { k, ok := keyOf[sp]; return k, ok })
	mk := func(i byte) [32]byte { return [32]byte{7, 7, 7, 7, i} }
	put := func(k [32]byte, off int64) span {
		sp := span{off: off, n: 10}
		keyOf[sp] = k
		x.put(k, sp)
		return sp
	}
	a, b, c := mk(1), mk(2), mk(3)
	put(a, 0)
	spB := put(b, 100)
	put(c, 200)
	spA := put(a, 300) // a later reply for a
	if x.len() != 3 || len(x.long) != 2 {
		t.Fatalf("%d indexed, %d by whole key; want 3 and 2", x.len(), len(x.long))
	}
	for k, want := range map[[32]byte]span{a: spA, b: spB, c: {200, 10}} {
		if got, ok := x.get(k); !ok || got != want {
			t.Errorf("key %v: %v %v, want %v", k[4], got, ok, want)
		}
	}
	if x.drop(b, span{off: 999, n: 10}) {
		t.Error("dropped b at a span it does not hold")
	}
	if !x.drop(b, spB) || !x.drop(a, spA) {
		t.Fatal("could not drop a and b at their spans")
	}
	if _, ok := x.get(b); ok {
		t.Error("b still indexed after its drop")
	}
	if got, ok := x.get(c); !ok || got != (span{200, 10}) {
		t.Errorf("c: %v %v after the others' drops", got, ok)
	}
	// A span too large to pack goes by whole key.
	huge := span{off: 1 << 40, n: 10}
	keyOf[huge] = mk(9)
	x.put(mk(9), huge)
	if got, ok := x.get(mk(9)); !ok || got != huge {
		t.Errorf("a span past the packed range: %v %v", got, ok)
	}
}

// Reserving room up front leaves the table the size the reservation asked
// for while it fills.
func TestReplyIndexReserve(t *testing.T) {
	x := newReplyIndex(func(span) ([32]byte, bool) { return [32]byte{}, false })
	x.reserve(100_000)
	size := len(x.tab.vals)
	if size*3 < 100_000*4 || size > 100_000*2 {
		t.Fatalf("reserved %d slots for 100,000", size)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := 0; i < 100_000; i++ {
		var k [32]byte
		for j := range k {
			k[j] = byte(rng.Uint32())
		}
		x.put(k, span{off: int64(i) * 100, n: 50})
	}
	if len(x.tab.vals) != size {
		t.Errorf("the table grew from %d to %d slots within its reservation", size, len(x.tab.vals))
	}
}
