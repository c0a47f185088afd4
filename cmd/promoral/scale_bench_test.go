package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/promoral/promoral/internal/scalestudy"
)

// The figures of docs/performance.md come from these benchmarks. Each
// runs a promoral binary built from this tree (go build, as a user would)
// in a child process, so the wall clock is the whole command's and the peak
// RSS is the child's own (getrusage's ru_maxrss of the waited process), the
// figure /usr/bin/time -v prints as "Maximum resident set size".
//
//	PROMORAL_SCALE_CASES=1000000 go test ./cmd/promoral -run '^$' -bench Scale -benchtime 1x -timeout 60m
//	go test ./cmd/promoral -run '^$' -bench QuickstartBinary -benchtime 5x

var built struct {
	once     sync.Once
	exe, err string
}

// scaleBinary builds cmd/promoral once per test binary, off the clock.
func scaleBinary(b *testing.B) string {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "promoral-bench-")
		if err != nil {
			built.err = err.Error()
			return
		}
		exe := filepath.Join(dir, "promoral")
		cmd := exec.Command("go", "build", "-o", exe, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Sprintf("go build: %v\n%s", err, out)
			return
		}
		built.exe = exe
	})
	if built.err != "" {
		b.Fatal(built.err)
	}
	return built.exe
}

// measured is one run of the binary.
type measured struct {
	wall    time.Duration
	cpu     time.Duration
	peakRSS int64 // bytes
	stdout  string
}

func runMeasured(b *testing.B, exe, dir string, args ...string) measured {
	b.Helper()
	return runProfiled(b, "", exe, dir, args...)
}

// runProfiled is runMeasured writing a CPU profile named step into the
// folder PROMORAL_SCALE_PROFILES names, if it names one.
func runProfiled(b *testing.B, step, exe, dir string, args ...string) measured {
	b.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"))
	if p := os.Getenv("PROMORAL_SCALE_PROFILES"); p != "" && step != "" {
		cmd.Env = append(cmd.Env, "PROMORAL_CPUPROFILE="+filepath.Join(p, step+".prof"))
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("promoral %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return measured{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		peakRSS: ru.Maxrss << 10, stdout: out.String()}
}

func (m measured) String() string {
	return fmt.Sprintf("wall %.1f s, cpu %.1f s, peak RSS %d MB", m.wall.Seconds(), m.cpu.Seconds(), m.peakRSS>>20)
}

// scaleManifest is what a benchmark checks of an apply: that it did what
// its figure claims (every case, the calls it says).
type scaleManifest struct {
	Cases    int `json:"cases"`
	CallsNew int `json:"calls_new"`
	Errors   int `json:"errors"`
}

func readScaleManifest(b *testing.B, run string) scaleManifest {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(run, "manifest.json"))
	if err != nil {
		b.Fatal(err)
	}
	var m scaleManifest
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkScale applies the scale study (scalestudy: 4 scripted models
// that answer at once, zero_shot, ETHICS-shaped items of about 120 tokens,
// every scenario distinct, the default metric blocks: classification with
// 1,000 bootstrap replicates per subset, and efficiency), then re-applies it
// unchanged, then with one metric block changed (the classification's
// bins), and reports each step's wall clock and peak RSS.
// PROMORAL_SCALE_CASES sets the cases (default 100,000), PROMORAL_SCALE_MODELS
// the models (default 4; 1 makes every case its own item).
func BenchmarkScale(b *testing.B) {
	cases := 100_000
	if v := os.Getenv("PROMORAL_SCALE_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 {
			b.Fatalf("PROMORAL_SCALE_CASES=%q: want a number of cases, at least 4", v)
		}
		cases = n
	}
	models := 4
	if v := os.Getenv("PROMORAL_SCALE_MODELS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > cases {
			b.Fatalf("PROMORAL_SCALE_MODELS=%q: want a number of models, at least 1", v)
		}
		models = n
	}
	exe := scaleBinary(b)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		if keep := os.Getenv("PROMORAL_SCALE_DIR"); keep != "" {
			// Kept for runs of the binary by hand (profiling a re-apply).
			dir = keep
		}
		o := scalestudy.Options{Items: cases / models, Models: models, Repo: repoRoot}
		runFile, err := scalestudy.Write(dir, o)
		if err != nil {
			b.Fatal(err)
		}
		out := filepath.Join(dir, "out", "scale")
		b.StartTimer()
		first := runProfiled(b, "apply", exe, dir, "apply", "-q", runFile)
		b.StopTimer()
		m := readScaleManifest(b, out)
		if m.Cases != o.Items*models || m.Errors != 0 || m.CallsNew != m.Cases {
			b.Fatalf("first apply: %+v, want %d cases, each one new call, no error", m, o.Items*models)
		}
		if keep := os.Getenv("PROMORAL_SCALE_DIR"); keep != "" {
			// The first apply's outputs, to re-apply by hand.
			if out, err := exec.Command("cp", "-a", out, out+".first").CombinedOutput(); err != nil {
				b.Fatalf("cp: %v\n%s", err, out)
			}
		}
		again := runProfiled(b, "reapply", exe, dir, "apply", "-q", runFile)
		if m := readScaleManifest(b, out); m.Cases != o.Items*models || m.CallsNew != 0 {
			b.Fatalf("re-apply: %+v, want every case and no new call", m)
		}
		o.Metrics = []string{"{kind: classification, bins: 15}", "{kind: efficiency}"}
		if _, err := scalestudy.Write(dir, o); err != nil {
			b.Fatal(err)
		}
		rescored := runProfiled(b, "rescore", exe, dir, "apply", "-q", runFile)
		if m := readScaleManifest(b, out); m.Cases != o.Items*models || m.CallsNew != 0 {
			b.Fatalf("re-apply with a changed metric: %+v, want every case and no new call", m)
		}
		b.Logf("%d cases: apply %v; re-apply unchanged %v; re-apply with one metric changed %v", m.Cases, first, again, rescored)
		b.ReportMetric(first.wall.Seconds(), "apply-s")
		b.ReportMetric(float64(first.peakRSS>>20), "apply-MB")
		b.ReportMetric(again.wall.Seconds(), "reapply-s")
		b.ReportMetric(float64(again.peakRSS>>20), "reapply-MB")
		b.ReportMetric(rescored.wall.Seconds(), "rescore-s")
		b.ReportMetric(float64(rescored.peakRSS>>20), "rescore-MB")
		if os.Getenv("PROMORAL_SCALE_DIR") == "" {
			os.RemoveAll(dir)
		}
	}
}

// BenchmarkQuickstartBinary runs the README's first command on the built
// binary, in a fresh folder each time (configs, prompts and data linked).
func BenchmarkQuickstartBinary(b *testing.B) {
	exe := scaleBinary(b)
	var peak int64
	var wall time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		for _, f := range []string{"configs", "prompts", "data"} {
			abs, _ := filepath.Abs(filepath.Join(repoRoot, f))
			if err := os.Symlink(abs, filepath.Join(dir, f)); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		m := runMeasured(b, exe, dir, "apply", "-q", "configs/quickstart.yaml")
		b.StopTimer()
		b.Logf("quickstart: %v", m)
		wall += m.wall
		peak = max(peak, m.peakRSS)
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s")
	b.ReportMetric(float64(peak>>20), "peak-MB")
}
