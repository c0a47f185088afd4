package engine_test

// Engine benchmarks. Run them with
//
//	go test ./pipeline/engine -run '^$' -bench Engine -benchtime 1x
//
// BenchmarkEngineStages measures stage executions per second with an
// instant in-process provider over a mix of single-turn and looping
// strategies. BenchmarkEngine200k plans and runs 200,000 cases, reports the
// peak heap, then re-runs the finished study (zero new calls) and reports
// how long that took.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// instant answers at once; the loop strategy's re-ask disagrees on odd
// items so some cases loop to their bound.
type instant struct{ n atomic.Int64 }

func (p *instant) Complete(_ context.Context, req *llm.Request) (*llm.Response, error) {
	p.n.Add(1)
	last := req.Messages[len(req.Messages)-1].Content
	text := "Confidence: 0.8\nAnswer: wrong"
	if strings.Contains(last, "sure") && strings.HasSuffix(strings.TrimSpace(req.Messages[0].Content), "1.") {
		text = "Answer: not wrong"
	}
	return &llm.Response{Choices: []llm.Choice{{Text: text, FinishReason: llm.FinishStop}}, Usage: llm.Usage{PromptTokens: 20, CompletionTokens: 8}}, nil
}

func benchStudy(b *testing.B, items int) string {
	b.Helper()
	var data strings.Builder
	data.Grow(items * 60)
	for i := 0; i < items; i++ {
		fmt.Fprintf(&data, `{"id":"i%07d","text":"I did thing number %d.","gold":"%d"}`+"\n", i, i, i%2)
	}
	return studytest.WriteTree(b, studytest.BaseTree(map[string]string{
		"data/items.jsonl": data.String(),
		"configs/run.yaml": `name: bench
models:
  - {name: bot, provider: scripted, script: {replies: [{text: unused}]}}
tasks: [toy]
strategies: [one_shot, loop]
settings: {concurrency: 16}
`,
	}))
}

func runBench(b *testing.B, dir, out string) (*engine.Summary, []spec.Result, time.Duration) {
	b.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(200)) // as the CLI sets them
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(640 << 20))
	st, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	st.Model("bot").Provider = &instant{}
	start := time.Now()
	sum, res, err := engine.NewEngine(st, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return sum, res, time.Since(start)
}

func BenchmarkEngineStages(b *testing.B) {
	dir := benchStudy(b, 10000)
	b.ResetTimer()
	var steps, calls int
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "out")
		sum, res, d := runBench(b, dir, out)
		elapsed += d
		calls += sum.CallsNew
		for _, r := range res {
			steps += r.Steps
		}
	}
	b.ReportMetric(float64(steps)/elapsed.Seconds(), "stages/s")
	b.ReportMetric(float64(calls)/elapsed.Seconds(), "calls/s")
}

// peakHeap samples the heap in use while fn runs.
func peakHeap(fn func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-done
	return peak.Load()
}

func BenchmarkEngine200k(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	dir := benchStudy(b, 100000) // x 2 strategies = 200,000 cases
	out := filepath.Join(b.TempDir(), "out")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		os.RemoveAll(out)
		runtime.GC()
		var sum *engine.Summary
		var first time.Duration
		peak := peakHeap(func() { sum, _, first = runBench(b, dir, out) })
		if sum.Cases != 200000 {
			b.Fatalf("cases = %d", sum.Cases)
		}
		runtime.GC()
		var again *engine.Summary
		var rerun time.Duration
		peak2 := peakHeap(func() { again, _, rerun = runBench(b, dir, out) })
		if again.CallsNew != 0 {
			b.Fatalf("re-run made %d new calls", again.CallsNew)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		b.ReportMetric(float64(peak2)/(1<<20), "rerun-peak-MiB")
		b.ReportMetric(first.Seconds(), "run-s")
		b.ReportMetric(rerun.Seconds(), "rerun-s")
	}
}
