package transport

import (
	"testing"
	"time"
)

// BenchmarkLearnedLimits: no limits set; a loopback server enforces a
// request and a token limit per 2 s window (sliding window or refilling
// bucket, rejected requests counted) and states them in the x-ratelimit-*
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
					bucket: tc.bucket, countRejected: true, completion: 40, latency: 50 * time.Millisecond})
				failed, st := rateRun(b, s, tc.total, 1)
				s.Close()
				util, accepted, rejected := s.utilisation()
				attempts := accepted + rejected
				b.ReportMetric(100*util, "%limit")
				b.ReportMetric(100*s.steady(), "%limit-after-1st-window")
				b.ReportMetric(100*float64(rejected)/float64(attempts), "%429")
				b.ReportMetric(float64(rejected), "429s")
				b.ReportMetric(float64(failed), "failed")
				if util < 0.97 || float64(rejected) > 0.01*float64(attempts) || failed > 0 {
					b.Errorf("%.1f %% of the limit, %d 429s of %d attempts, %d failed (stats %+v)", 100*util, rejected, attempts, failed, st.Account)
				}
			}
		})
	}
}
