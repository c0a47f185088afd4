package transport

import (
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// BenchmarkLearnedLimits: no limits set; a loopback server enforces a
// request and a token limit per 2 s window (sliding window or refilling
// bucket, rejected requests counted, the reply's usage replacing the
// tokens reserved) and states them in the x-ratelimit-*
// headers. Reports the share of the physical limit used (requests ÷
// request rate or tokens ÷ token rate, whichever is larger, over the
// whole run and after the first window), the share of attempts answered
// 429, and failed cases.
//
//	go test -run '^$' -bench LearnedLimits -benchtime 1x ./pipeline/transport/
func BenchmarkLearnedLimits(b *testing.B) {
	if testing.Short() {
		b.Skip("takes about a minute")
	}
	for _, tc := range []struct {
		name       string
		bucket     bool
		reqs, toks float64
		total      int
	}{
		// 100 requests / 2 s; tokens are plenty.
		{"requests/sliding", false, 100, 1e6, 800},
		{"requests/bucket", true, 100, 1e6, 800},
		// 140 tokens used per request (200 reserved): about 170 requests
		// / 2 s, under a request limit of 1000. (At 12,000 tokens / 2 s,
		// where one request's reservation is 1.7 % of the window and the
		// in-flight reservations take their share of it, a sliding
		// window holds the pace at 96.8 %.)
		{"tokens/sliding", false, 1000, 24000, 1200},
		{"tokens/bucket", true, 1000, 24000, 1200},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				s := newLimitServer(&limitServer{window: 2 * time.Second, reqs: tc.reqs, toks: tc.toks,
					bucket: tc.bucket, countRejected: true, refund: true, completion: 40, latency: 50 * time.Millisecond})
				failed, st := rateRun(b, s, tc.total, 1)
				s.Close()
				util, accepted, rejected := s.utilisation()
				attempts := accepted + rejected
				b.ReportMetric(100*util, "%limit")
				b.ReportMetric(100*s.steady(), "%limit-after-1st-window")
				b.ReportMetric(100*float64(rejected)/float64(attempts), "%429")
				b.ReportMetric(float64(rejected), "429s")
				b.ReportMetric(float64(failed), "failed")
				b.Logf("%s: %.1f %% of the limit, %d × 429 of %d attempts; refunds learned: %v",
					tc.name, 100*util, rejected, attempts, st.Account.Dims[llm.DimTokens].Refunds)
				if util < 0.97 || float64(rejected) > 0.01*float64(attempts) || failed > 0 {
					b.Errorf("%.1f %% of the limit, %d 429s of %d attempts, %d failed (stats %+v)", 100*util, rejected, attempts, failed, st.Account)
				}
			}
		})
	}
}

// rateRegimes are the four regimes of BenchmarkRateRegimes: a request or
// a token limit binds, counted in a sliding window or a refilling
// bucket, each the way OpenAI documents it (a request counts its prompt
// plus its max_tokens when admitted, whatever its reply uses). Requests
// ask for 300 tokens and their replies write 12; the prompt is about 100.
var rateRegimes = []struct {
	name       string
	bucket     bool
	reqs, toks float64
	dim        int
}{
	{"requests/sliding", false, 100, 1e6, llm.DimRequests},
	{"requests/bucket", true, 100, 1e6, llm.DimRequests},
	// About 400 tokens counted a request: 100 requests / 2 s, under a
	// request limit of 1000.
	{"tokens/sliding", false, 1000, 40000, llm.DimTokens},
	{"tokens/bucket", true, 1000, 40000, llm.DimTokens},
}

// BenchmarkRateRegimes: no limits set; for each of the four regimes, 800
// requests against a loopback server with a 2 s window. Reports the share
// of the physical limit used (as the server counts; over the whole run
// and after the first window, as a full bucket at the start lets more
// through than the rate), the share of
// attempts answered 429, and the share of the limit the summary's
// "limited by" line states (its dimension in the log).
//
//	go test -run '^$' -bench RateRegimes -benchtime 1x -v ./pipeline/transport/
func BenchmarkRateRegimes(b *testing.B) {
	if testing.Short() {
		b.Skip("takes about a minute")
	}
	for _, tc := range rateRegimes {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				s := newLimitServer(&limitServer{window: 2 * time.Second, reqs: tc.reqs, toks: tc.toks,
					bucket: tc.bucket, countRejected: true, completion: 12, maxTokens: 300, latency: 50 * time.Millisecond})
				failed, st := rateRun(b, s, 800, 1)
				s.Close()
				util, accepted, rejected := s.utilisation()
				attempts := accepted + rejected
				name, used, _ := st.Account.Limiting()
				steady := s.steady()
				b.ReportMetric(100*util, "%limit")
				b.ReportMetric(100*steady, "%limit-after-1st-window")
				b.ReportMetric(100*float64(rejected)/float64(attempts), "%429")
				b.ReportMetric(float64(rejected), "429s")
				b.ReportMetric(float64(attempts), "attempts")
				b.ReportMetric(100*used, "%said")
				b.ReportMetric(float64(failed), "failed")
				b.Logf("%s: %.1f %% of the limit (%.1f %% after the first window), %d × 429 of %d attempts; summary: limited by %q, %.0f %%; refunds learned: %v",
					tc.name, 100*util, 100*steady, rejected, attempts, name, 100*used, st.Account.Dims[llm.DimTokens].Refunds)
			}
		})
	}
}
