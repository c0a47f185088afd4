package view

// Benchmarks of a 100,000-case run, the scale the view must open at once:
//
//	go test ./view -run '^$' -bench 100k -benchtime 10x
//
// The run is made once per process by the real engine (2 models x 2
// strategies x 25,000 items; one strategy makes two calls), with replies
// of 100-250 words so that the text the search index reads is realistic:
// results.parquet and calls.parquet as apply writes them.
//
//	BenchmarkOpen100k     Open: the list and every filter usable
//	BenchmarkIndex100k    the background pass: calls located, search index built
//	BenchmarkFilter100k   one list request: filters, every facet's counts, a page of rows
//	BenchmarkSearch100k   the same with two search words (index ready, cache off)
//	BenchmarkCase100k     one case page: its results row, calls and trace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// cpuTime is the process's CPU time: on a shared machine it says what the
// work costs when wall time says how busy the neighbours are.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerOp reports the CPU time per operation of the timed part.
type cpuPerOp struct {
	b     *testing.B
	total time.Duration
	start time.Duration
}

func (c *cpuPerOp) on()  { c.start = cpuTime() }
func (c *cpuPerOp) off() { c.total += cpuTime() - c.start }
func (c *cpuPerOp) report() {
	c.b.ReportMetric(float64(c.total.Microseconds())/1000/float64(c.b.N), "cpu-ms/op")
}

const benchItems = 25000 // x 2 models x 2 strategies = 100,000 cases

var big struct {
	once sync.Once
	dir  string
	err  error
	took time.Duration
}

// words is a vocabulary of made-up words, large enough that the index has
// as many distinct words as English replies do.
func words(n int) []string {
	syl := []string{"ka", "to", "ri", "me", "su", "na", "lo", "pe", "vi", "da", "ne", "mo", "ti", "ga", "bu", "shi", "ra", "ze", "fo", "qu"}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for k := 0; k < 2+rng.IntN(3); k++ {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		out[i] = b.String()
	}
	return out
}

var vocab = words(8000)

func prose(rng *rand.Rand, n int) string {
	var b strings.Builder
	for k := 0; k < n; k++ {
		if k > 0 {
			b.WriteByte(' ')
		}
		// Zipf-like: common words often, the tail rarely.
		w := vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64()*rng.Float64())]
		b.WriteString(w)
		if rng.IntN(14) == 0 {
			b.WriteString(".\n")
		}
	}
	return b.String()
}

// chatty answers every request with a long reply; about 2% do not state
// an answer the rules read.
type chatty struct{}

func (chatty) Complete(_ context.Context, req *llm.Request) (*llm.Response, error) {
	last := req.Messages[len(req.Messages)-1].Content
	seed := uint64(len(req.Messages))
	for _, c := range last {
		seed = seed*31 + uint64(c)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	text := prose(rng, 100+rng.IntN(150))
	switch rng.IntN(50) {
	case 0:
		text += "\nVerdict: wrong"
	default:
		text += fmt.Sprintf("\nConfidence: 0.%d\nAnswer: %s", 5+rng.IntN(5), []string{"wrong", "not wrong"}[rng.IntN(2)])
	}
	return &llm.Response{Choices: []llm.Choice{{Text: text, FinishReason: llm.FinishStop}}, Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 180}}, nil
}

// bigRun writes the 100,000-case run once per process.
func bigRun(b *testing.B) string {
	b.Helper()
	big.once.Do(func() {
		// PROMORAL_VIEW_BENCH_DIR keeps the run between processes (it takes
		// a minute or two to make); otherwise it lives in a temp folder.
		dir := os.Getenv("PROMORAL_VIEW_BENCH_DIR")
		if dir != "" {
			if _, err := os.Stat(filepath.Join(dir, "out", "results.parquet")); err == nil {
				big.dir = filepath.Join(dir, "out")
				return
			}
		} else {
			var err error
			if dir, err = os.MkdirTemp("", "promoral-view-bench-"); err != nil {
				big.err = err
				return
			}
		}
		rng := rand.New(rand.NewPCG(3, 4))
		var data strings.Builder
		for i := 0; i < benchItems; i++ {
			fmt.Fprintf(&data, `{"id":"i%06d","text":%q,"gold":"%d","kind":"%s"}`+"\n", i, prose(rng, 30+rng.IntN(40)), i%2, []string{"plain", "twist"}[i%3/2])
		}
		files := map[string]string{
			"data/items.jsonl": data.String(),
			"configs/tasks/toy.yaml": `name: toy
type: label
dataset: {path: ../../data/items.jsonl, id: id}
gold: gold
answer:
  labels:
    - {value: bad, aliases: [wrong], gold: ["1"]}
    - {value: fine, aliases: [not wrong], gold: ["0"]}
extract:
  label: [{kind: prefix, prefix: Answer}]
  confidence: [{kind: prefix, prefix: Confidence}]
subsets:
  twist: item.kind == "twist"
blocks:
  question: "Is this wrong? {{.item.text}}"
`,
			"configs/strategies/one_shot.yaml": `name: one_shot
stages:
  - {name: ask, kind: prompt, messages: [{role: user, text: "{{.task.question}}"}]}
  - {name: parse, kind: extract}
outputs: {label: stages.parse.label, confidence: stages.parse.confidence}
`,
			"configs/strategies/two_turn.yaml": `name: two_turn
stages:
  - {name: ask, kind: prompt, messages: [{role: user, text: "{{.task.question}}"}]}
  - {name: again, kind: prompt, continue: ask, messages: [{role: user, text: "Think again, then answer."}]}
  - {name: parse, kind: extract}
outputs: {label: stages.parse.label, confidence: stages.parse.confidence}
`,
			"configs/run.yaml": `name: bench100k
models:
  - {name: alpha, provider: scripted, script: {replies: [{text: unused}]}}
  - {name: beta, provider: scripted, script: {replies: [{text: unused}]}}
tasks: [toy]
strategies: [one_shot, two_turn]
settings: {concurrency: 16}
`,
		}
		for name, content := range files {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if big.err = os.WriteFile(p, []byte(content), 0o644); big.err != nil {
				return
			}
		}
		st, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
		if err != nil {
			big.err = err
			return
		}
		st.Model("alpha").Provider = chatty{}
		st.Model("beta").Provider = chatty{}
		out := filepath.Join(dir, "out")
		start := time.Now()
		sum, _, err := engine.NewEngine(st, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background())
		if err != nil {
			big.err = err
			return
		}
		if sum.Cases != 4*benchItems {
			big.err = fmt.Errorf("%d cases, want %d", sum.Cases, 4*benchItems)
			return
		}
		big.took = time.Since(start)
		big.dir = out
	})
	if big.err != nil {
		b.Fatal(big.err)
	}
	return big.dir
}

func reportSizes(b *testing.B, dir string) {
	for _, f := range []string{"results.parquet", "calls.parquet"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			b.ReportMetric(float64(st.Size())/(1<<20), strings.TrimSuffix(f, ".parquet")+"-MiB")
		}
	}
}

func BenchmarkOpen100k(b *testing.B) {
	dir := bigRun(b)
	runtime.GC()
	b.ResetTimer()
	var heap uint64
	cpu := &cpuPerOp{b: b}
	for i := 0; i < b.N; i++ {
		cpu.on()
		r, err := Open(dir)
		cpu.off()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if r.Len() != 4*benchItems {
			b.Fatalf("%d cases", r.Len())
		}
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		heap = max(heap, m.HeapInuse)
		r.Close()
		r.idx.wait()
		b.StartTimer()
	}
	b.ReportMetric(float64(heap)/(1<<20), "heap-after-open-MiB")
	reportSizes(b, dir)
	cpu.report()
}

func BenchmarkIndex100k(b *testing.B) {
	dir := bigRun(b)
	b.ResetTimer()
	var heap uint64
	words := 0
	cpu := &cpuPerOp{b: b}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu.on()
		r.idx.wait()
		cpu.off()
		b.StopTimer()
		if r.idx.err != nil {
			b.Fatal(r.idx.err)
		}
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		heap = max(heap, m.HeapInuse)
		words = len(r.idx.terms)
		r.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(words), "words")
	cpu.report()
	b.ReportMetric(float64(heap)/(1<<20), "heap-indexed-MiB")
}

func openBig(b *testing.B) *Run {
	r, err := Open(bigRun(b))
	if err != nil {
		b.Fatal(err)
	}
	r.idx.wait()
	b.Cleanup(r.Close)
	return r
}

func BenchmarkFilter100k(b *testing.B) {
	r := openBig(b)
	queries := []Query{
		{Sel: map[string][]string{}},
		{Sel: map[string][]string{"model": {"beta"}, "outcome": {"wrong"}}},
		{Sel: map[string][]string{"strategy": {"two_turn"}, "subset": {"twist"}, "parsed": {"unparsed"}}},
		{Sel: map[string][]string{"model": {"alpha"}}, Sort: "-conf"},
	}
	cpu := &cpuPerOp{b: b}
	b.ResetTimer()
	cpu.on()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		q.Limit = 100
		m, err := r.Find(q)
		if err != nil {
			b.Fatal(err)
		}
		for k := 0; k < len(m.Cases) && k < 100; k++ {
			r.row(m.Cases[k])
		}
	}
	cpu.off()
	cpu.report()
}

func BenchmarkSearch100k(b *testing.B) {
	r := openBig(b)
	qs := []string{vocab[3] + " " + vocab[40], vocab[500], "ka", vocab[7] + " " + vocab[9]}
	cpu := &cpuPerOp{b: b}
	b.ResetTimer()
	cpu.on()
	for i := 0; i < b.N; i++ {
		r.idx.cmu.Lock()
		clear(r.idx.cache)
		r.idx.cmu.Unlock()
		m, err := r.Find(Query{Sel: map[string][]string{"model": {"alpha"}}, Q: qs[i%len(qs)], Limit: 100})
		if err != nil || m.Search != "ready" {
			b.Fatal(err, m.Search)
		}
	}
	cpu.off()
	cpu.report()
}

func BenchmarkCase100k(b *testing.B) {
	r := openBig(b)
	cpu := &cpuPerOp{b: b}
	b.ResetTimer()
	cpu.on()
	for i := 0; i < b.N; i++ {
		c, err := r.Case((i * 7919) % r.Len())
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Steps) == 0 {
			b.Fatal("no steps")
		}
	}
	cpu.off()
	cpu.report()
}
