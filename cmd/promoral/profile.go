package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// profileCPU writes a CPU profile of the whole command to the file named by
// PROMORAL_CPUPROFILE, so the scale figures can be explained on the built
// binary as a user runs it; the returned func ends the profile.
func profileCPU() func() {
	path := os.Getenv("PROMORAL_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "promoral: warning: PROMORAL_CPUPROFILE:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
