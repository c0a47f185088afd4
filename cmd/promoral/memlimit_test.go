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
		cases int
		want  int64
	}{{0, 224 << 20}, {100_000, 224 << 20}, {1_000_000, 64<<20 + 168*1_000_000}, {4_000_000, 64<<20 + 168*4_000_000}} {
		fitMemoryLimit(c.cases)
		got := debug.SetMemoryLimit(-1)
		if got != c.want || got < 160*int64(c.cases)+32<<20 {
			t.Errorf("%d cases: limit %d MiB, want %d MiB (above the live heap's %d MiB)", c.cases, got>>20, c.want>>20, 160*int64(c.cases)>>20)
		}
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	fitMemoryLimit(10_000_000)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("GOMEMLIMIT=1GiB was replaced by %d MiB", got>>20)
	}
}
