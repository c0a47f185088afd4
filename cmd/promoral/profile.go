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
	endAllocs := profileAllocs()
	path := os.Getenv("PROMORAL_CPUPROFILE")
	if path == "" {
		return endAllocs
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
		endAllocs()
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
	return func() {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "promoral: warning: PROMORAL_ALLOCPROFILE:", err)
		}
	}
}
