package main

import (
	"runtime/debug"
	"testing"
)

// The soft memory ceiling stays at least 32 MiB above the live heap a study needs
// (about 50 MB, 60 bytes a case and 80 an item, 22 KB a case batch mode
// keeps in flight), so a large study never runs its collector without end;
// it leaves small studies to the collector's pacing; GOMEMLIMIT, when set,
// is left alone.
func TestMemoryLimitFitsTheStudy(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	for _, c := range []struct {
		cases, items, inFlight int
		want                   int64
	}{{0, 0, 0, 160 << 20}, {100_000, 25_000, 0, 160 << 20},
		// The scale study: four models over a quarter of the items each.
		{1_000_000, 250_000, 0, 64<<20 + 80*1_000_000 + 96*250_000},
		// One model: every case its own item.
		{1_000_000, 1_000_000, 0, 64<<20 + 176*1_000_000},
		{4_000_000, 1_000_000, 0, 64<<20 + 80*4_000_000 + 96*1_000_000},
		// The paper in batch mode: four models of 5,000 cases in flight.
		{110_320, 10_000, 20_000, 64<<20 + 80*110_320 + 96*10_000 + 32<<10*20_000}} {
		fitMemoryLimit(c.cases, c.items, c.inFlight)
		got := debug.SetMemoryLimit(-1)
		live := 50<<20 + 60*int64(c.cases) + 80*int64(c.items) + 22<<10*int64(c.inFlight)
		if got != c.want || got < live+32<<20 {
			t.Errorf("%d cases, %d items, %d in flight: limit %d MiB, want %d MiB (32 MiB above the live heap's %d MiB)", c.cases, c.items, c.inFlight, got>>20, c.want>>20, live>>20)
		}
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	fitMemoryLimit(10_000_000, 1_000_000, 0)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("GOMEMLIMIT=1GiB was replaced by %d MiB", got>>20)
	}
}
