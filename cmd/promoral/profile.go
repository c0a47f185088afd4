package main

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// profileCPU writes a CPU profile of the whole command to the file named by
// PROMORAL_CPUPROFILE, so the scale figures can be explained on the built
// binary as a user runs it, and starts the other profiles the environment
// asks for; the returned func ends them all.
func profileCPU() func() {
	endHeap, endAllocs := profilePeakHeap(), profileAllocs()
	endOthers := func() { endAllocs(); endHeap() }
	path := os.Getenv("PROMORAL_CPUPROFILE")
	if path == "" {
		return endOthers
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "promoral: warning: PROMORAL_CPUPROFILE:", err)
		return endOthers
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		endOthers()
	}
}

// profileAllocs writes, at the end of the command, the profile of what it
// allocated to the file named by PROMORAL_ALLOCPROFILE: under apply's soft
// memory limit every byte allocated costs collector time.
func profileAllocs() func() {
	path := os.Getenv("PROMORAL_ALLOCPROFILE")
	if path == "" {
		return func() {}
	}
	return func() { writeProfile("allocs", path, "PROMORAL_ALLOCPROFILE") }
}

// writeProfile writes the named runtime profile to path, warning on
// failure (a profile is an aid, never a reason to fail the command).
func writeProfile(name, path, env string) bool {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup(name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "promoral: warning: %s: %v\n", env, err)
	}
	return err == nil
}

// profilePeakHeap writes the profile of what was live when the live heap
// was at its largest (checked every 200 ms, as of the collection before) to
// the file named by PROMORAL_HEAPPROFILE: what sets apply's peak memory.
func profilePeakHeap() func() {
	path := os.Getenv("PROMORAL_HEAPPROFILE")
	if path == "" {
		return func() {}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak {
				peak = v
				if !writeProfile("heap", path, "PROMORAL_HEAPPROFILE") {
					return
				}
			}
		}
	}()
	return func() { close(stop); <-done }
}
