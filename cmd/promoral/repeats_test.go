package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// kill -9 in the middle of a study with repeats: the next apply sends the
// calls in flight again and the ones never sent, each repeat's once, and
// its outputs hold every case once. (The server cannot tell the repeats of
// an item apart: a repeat's index is in its journal key, not in what is
// sent; it counts requests.)
func TestKill9WithRepeatsResumesWithoutDuplicates(t *testing.T) {
	fs := newFaultServer(t)
	dir, cfg := faultStudy(t, fs, 10, "")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("settings: {repeats: 3}\n")
	f.Close()
	var answered int
	fs.setFault(func(string, int) string {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		answered++
		if answered > 7 {
			return "hold"
		}
		return ""
	})
	out := filepath.Join(dir, "out")
	p := startCLI(t, "apply", "-q", cfg, "--out", out)
	waitUntil(t, "four calls on the wire", func() bool { _, _, held := fs.counts(); return held == 4 })
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait()
	fs.setFault(func(string, int) string { return "" })
	fs.open()
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 || !strings.Contains(stdout, "30 cases, 30 calls (23 new, 7 cached), 0 errors") ||
		!strings.Contains(words(stdout), "4 call(s) were in flight when an earlier apply was killed; 4 of them were sent again") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	// 7 answered before the kill, 4 held when it came, 23 sent after:
	// the 4 held sent again, nothing else twice.
	if total, _, _ := fs.counts(); total != 34 {
		t.Errorf("the server received %d requests, want 34 (7 answered and 4 in flight before the kill, 23 after)", total)
	}
	ids := map[string]int{}
	reps := map[int64]int{}
	for _, r := range readRows(t, filepath.Join(out, "results.parquet")) {
		ids[r["case_id"].(string)]++
		reps[r["repeat"].(int64)]++
	}
	if len(ids) != 30 || reps[0] != 10 || reps[1] != 10 || reps[2] != 10 {
		t.Errorf("%d distinct cases (want 30), per repeat %v", len(ids), reps)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("case %s has %d rows", id, n)
		}
	}
	calls := 0
	for _, r := range readRows(t, filepath.Join(out, "calls.parquet")) {
		if r["final"] == true {
			calls++
		}
	}
	if calls != 30 {
		t.Errorf("calls.parquet has %d final rows, want 30", calls)
	}
}
