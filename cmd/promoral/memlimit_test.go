package main

import (
	"runtime/debug"
	"testing"
)

// The soft memory ceiling stays above the live heap a study's scoring
// needs (about 160 bytes a case), so a large study never runs its collector
// without end, and GOMEMLIMIT, when set, is left alone.
func TestMemoryLimitFitsTheStudy(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	for _, c := range []struct {
		cases, inFlight int
		want            int64
	}{{0, 0, 224 << 20}, {100_000, 0, 224 << 20}, {1_000_000, 0, 64<<20 + 168*1_000_000}, {4_000_000, 0, 64<<20 + 168*4_000_000},
		// The paper in batch mode: four models of 5,000 cases in flight.
		{110_320, 20_000, 64<<20 + 168*110_320 + 32<<10*20_000}} {
		fitMemoryLimit(c.cases, c.inFlight)
		got := debug.SetMemoryLimit(-1)
		live := 160*int64(c.cases) + 22<<10*int64(c.inFlight)
		if got != c.want || got < live+32<<20 {
			t.Errorf("%d cases, %d in flight: limit %d MiB, want %d MiB (above the live heap's %d MiB)", c.cases, c.inFlight, got>>20, c.want>>20, live>>20)
		}
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	fitMemoryLimit(10_000_000, 0)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("GOMEMLIMIT=1GiB was replaced by %d MiB", got>>20)
	}
}
