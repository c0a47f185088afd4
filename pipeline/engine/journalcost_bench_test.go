package engine_test

// BenchmarkApplyOverHTTP measures a whole apply against a local
// OpenAI-compatible server that answers at once: engine, journal (an intent
// and an outcome line per request), transport, SDK and HTTP. Run with
//
//	go test ./pipeline/engine -run '^$' -bench ApplyOverHTTP -benchtime 3x

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/scoring"
)

func BenchmarkApplyOverHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Confidence: 0.8\nAnswer: wrong"}}],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`)
	}))
	defer srv.Close()
	const items = 2000
	var data strings.Builder
	for i := 0; i < items; i++ {
		fmt.Fprintf(&data, `{"id":"i%05d","text":"I did thing number %d.","gold":"%d"}`+"\n", i, i, i%2)
	}
	dir := studytest.WriteTree(b, studytest.BaseTree(map[string]string{
		"data/items.jsonl": data.String(),
		"configs/run.yaml": fmt.Sprintf(`name: http
models:
  - {name: local, provider: openai-compatible, model: m, base_url: %s/v1}
tasks: [toy]
strategies: [one_shot]
settings: {concurrency: 16}
`, srv.URL),
	}))
	b.ResetTimer()
	calls := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		st := studytest.MustLoad(b, filepath.Join(dir, "configs/run.yaml"))
		if err := engine.Connect(st, false); err != nil {
			b.Fatal(err)
		}
		out := filepath.Join(b.TempDir(), "out")
		b.Setenv(engine.CacheEnv, b.TempDir()) // every iteration pays: an empty shared cache
		b.StartTimer()
		sum, _, err := engine.NewEngine(st, engine.Options{OutDir: out, Doer: engine.TransportsShared(engine.RateOptions{Concurrency: 16}), Scorer: scoring.New()}).Run(context.Background())
		if err != nil || sum.CallsNew != items {
			b.Fatalf("%v %+v", err, sum)
		}
		calls += sum.CallsNew
	}
	b.ReportMetric(float64(calls)/b.Elapsed().Seconds(), "calls/s")
}
