// Benchmarks for the transport over the real OpenAI provider and a loopback
// server. They take 5–30 s each and only run with -bench; -short skips them.
//
//	go test -run '^$' -bench . -benchtime 1x ./pipeline/transport/
//
// BenchmarkThroughput: 3,200 requests, server answers after 100 ms,
// concurrency 64; the ceiling is 640 req/s. Reports req/s and HeapInuse (MB)
// at start, middle and end.
// BenchmarkRPMPacing: RPM=600 for ~25 s against a server that answers 429
// when it sees more than 600/min (token bucket, burst 3). Reports the rate the
// server measured and how many 429s it sent (should be 0).

package transport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/providers"
)

func heapMB() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

func BenchmarkThroughput(b *testing.B) {
	if testing.Short() {
		b.Skip("takes ~5 s")
	}
	// PROMORAL_BENCH_REQUESTS=50000 checks that memory stays flat over a
	// long run; the default keeps the benchmark to a few seconds.
	total := 3200
	if n, err := strconv.Atoi(os.Getenv("PROMORAL_BENCH_REQUESTS")); err == nil && n > 0 {
		total = n
	}
	const concurrency, workers = 64, 256
	reply := openAIReply("fine")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(100 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	defer srv.Close()
	p, err := providers.New(providers.Config{Provider: providers.OpenAI, BaseURL: srv.URL + "/v1", APIKey: "sk-bench", Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}

	for b.Loop() {
		tr := New(p, Options{Concurrency: concurrency})
		runtime.GC()
		start := heapMB()
		var mid float64
		var done, failed atomic.Int64
		jobs := make(chan int)
		var wg sync.WaitGroup
		t0 := time.Now()
		for range workers {
			wg.Go(func() {
				for i := range jobs {
					r := &llm.Request{Model: "gpt-4.1", MaxTokens: 16, Messages: []llm.Message{
						{Role: llm.RoleSystem, Content: "Answer with one word."},
						{Role: llm.RoleUser, Content: fmt.Sprintf("Case %d: is it permissible to lie to protect a friend?", i)},
					}}
					if _, err := tr.Do(context.Background(), r, nil); err != nil {
						failed.Add(1)
					}
					if done.Add(1) == int64(total/2) {
						mid = heapMB()
					}
				}
			})
		}
		for i := range total {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		elapsed := time.Since(t0)
		end := heapMB()
		st := tr.Stats()
		if failed.Load() > 0 || st.Attempts != int64(total) {
			b.Fatalf("%d failed, %d attempts for %d requests", failed.Load(), st.Attempts, total)
		}
		b.ReportMetric(float64(total)/elapsed.Seconds(), "req/s")
		b.ReportMetric(start, "heapMB-start")
		b.ReportMetric(mid, "heapMB-mid")
		b.ReportMetric(end, "heapMB-end")
	}
}

func BenchmarkRPMPacing(b *testing.B) {
	if testing.Short() {
		b.Skip("takes ~25 s")
	}
	const rpm, total = 600, 251 // 250 intervals of 100 ms
	reply := openAIReply("fine")
	for b.Loop() {
		// The server enforces the same 600/min as a token bucket with a
		// little slack (burst 3) for network jitter.
		limit := rate.NewLimiter(rate.Limit(rpm/60.0), 3)
		var mu sync.Mutex
		var accepted []time.Time
		var rejected atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			if !limit.Allow() {
				rejected.Add(1)
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(429)
				_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests"}}`)
				return
			}
			mu.Lock()
			accepted = append(accepted, time.Now())
			mu.Unlock()
			_, _ = io.WriteString(w, reply)
		}))
		p, err := providers.New(providers.Config{Provider: providers.OpenAI, BaseURL: srv.URL + "/v1", APIKey: "sk-bench", Timeout: 30 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		tr := New(p, Options{RPM: rpm, Concurrency: 64})
		var wg sync.WaitGroup
		for i := range total {
			wg.Go(func() {
				r := &llm.Request{Model: "gpt-4.1", MaxTokens: 16, Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint("case ", i)}}}
				if _, err := tr.Do(context.Background(), r, nil); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		srv.Close()
		mu.Lock()
		span := accepted[len(accepted)-1].Sub(accepted[0])
		measured := float64(len(accepted)-1) / span.Minutes()
		mu.Unlock()
		b.ReportMetric(measured, "req/min")
		b.ReportMetric(span.Seconds(), "s")
		b.ReportMetric(float64(rejected.Load()), "429s")
		if dev := measured/rpm - 1; dev > 0.05 || dev < -0.05 || rejected.Load() > 0 {
			b.Errorf("measured %.1f req/min (%.1f%% off %d) with %d 429s", measured, 100*dev, rpm, rejected.Load())
		}
	}
}
