package engine_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScaleProbe reports CPU time (robust on a shared machine) of a
// first run and a re-run for PROBE_ITEMS items (x2 strategies).
func BenchmarkScaleProbe(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("PROBE_ITEMS"))
	if n == 0 {
		b.Skip("set PROBE_ITEMS")
	}
	dir := benchStudy(b, n)
	out := filepath.Join(b.TempDir(), "out")
	b.ResetTimer()
	c0 := cpuTime()
	_, _, d := runBench(b, dir, out)
	c1 := cpuTime()
	_, _, d2 := runBench(b, dir, out)
	c2 := cpuTime()
	b.Logf("items %d: run %v (cpu %v), rerun %v (cpu %v)", n, d, c1-c0, d2, c2-c1)
}
