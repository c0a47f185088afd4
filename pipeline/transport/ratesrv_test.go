package transport

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// limitServer is an OpenAI-compatible loopback server that enforces a
// request limit and a token limit per window the way OpenAI documents
// them, and states both on every reply in the x-ratelimit-* headers.
// Windows are configurable (seconds rather than a minute) so a test runs
// in seconds. A request counts on arrival its prompt (four characters a
// token) plus its max_tokens, and keeps counting that much (OpenAI's
// rule) unless refund is set: then the reply's usage replaces it when
// the reply is sent (a rule some other servers apply).
type limitServer struct {
	window        time.Duration
	reqs, toks    float64 // limits per window
	bucket        bool    // refilling bucket (else sliding window)
	countRejected bool    // a rejected request still counts against the request limit
	refund        bool    // the reply's usage replaces the reservation
	latency       time.Duration
	completion    int // tokens each reply writes
	maxTokens     int // the max_tokens of rateRun's requests (default 100)

	mu                 sync.Mutex
	reqLog, tokLog     []*entry // sliding window
	reqLevel, tokLevel float64  // bucket
	last               time.Time
	accepted, rejected int
	served             []entry // accepted requests: arrival and tokens counted
	first, end         time.Time
	srv                *httptest.Server
}

type entry struct {
	t time.Time
	n float64
}

func newLimitServer(s *limitServer) *limitServer {
	s.reqLevel, s.tokLevel = s.reqs, s.toks
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

func (s *limitServer) URL() string { return s.srv.URL + "/v1" }
func (s *limitServer) Close()      { s.srv.Close() }

// sum is what the log holds within the window, and when it is empty again.
func (s *limitServer) sum(log *[]*entry, now time.Time) (float64, time.Duration) {
	i := 0
	for i < len(*log) && now.Sub((*log)[i].t) >= s.window {
		i++
	}
	*log = (*log)[i:]
	total := 0.0
	for _, e := range *log {
		total += e.n
	}
	var reset time.Duration
	if n := len(*log); n > 0 {
		reset = (*log)[n-1].t.Add(s.window).Sub(now)
	}
	return total, reset
}

// waitFor is how long until n fits in a sliding log with limit l.
func (s *limitServer) waitFor(log []*entry, now time.Time, used, n, l float64) time.Duration {
	for _, e := range log {
		used -= e.n
		if used+n <= l {
			return e.t.Add(s.window).Sub(now)
		}
	}
	return s.window
}

func (s *limitServer) refill(now time.Time) {
	if !s.last.IsZero() {
		dt := now.Sub(s.last).Seconds() / s.window.Seconds()
		s.reqLevel = math.Min(s.reqs, s.reqLevel+dt*s.reqs)
		s.tokLevel = math.Min(s.toks, s.tokLevel+dt*s.toks)
	}
	s.last = now
}

func (s *limitServer) handle(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		MaxTokens int `json:"max_tokens"`
	}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	prompt := 0
	for _, m := range body.Messages {
		prompt += len(m.Content) / 4
	}
	prompt = max(prompt, 1)
	reserve := float64(prompt + body.MaxTokens)

	s.mu.Lock()
	now := time.Now()
	if s.first.IsZero() {
		s.first = now
	}
	var ok bool
	var reqRem, tokRem float64
	var reqReset, tokReset, retry time.Duration
	var tokEntry *entry
	rate := func(l float64) float64 { return l / s.window.Seconds() }
	if s.bucket {
		s.refill(now)
		ok = s.reqLevel >= 1 && s.tokLevel >= reserve
		switch {
		case ok:
			s.reqLevel--
			s.tokLevel -= reserve
		case s.countRejected:
			s.reqLevel--
		}
		if !ok {
			need := math.Max((1-s.reqLevel)/rate(s.reqs), (reserve-s.tokLevel)/rate(s.toks))
			retry = time.Duration(need * float64(time.Second))
		}
		reqRem, tokRem = math.Max(s.reqLevel, 0), math.Max(s.tokLevel, 0)
		reqReset = time.Duration((s.reqs - s.reqLevel) / rate(s.reqs) * float64(time.Second))
		tokReset = time.Duration((s.toks - s.tokLevel) / rate(s.toks) * float64(time.Second))
	} else {
		ru, _ := s.sum(&s.reqLog, now)
		tu, _ := s.sum(&s.tokLog, now)
		ok = ru+1 <= s.reqs && tu+reserve <= s.toks
		if ok || s.countRejected {
			s.reqLog = append(s.reqLog, &entry{now, 1})
		}
		if ok {
			tokEntry = &entry{now, reserve}
			s.tokLog = append(s.tokLog, tokEntry)
		} else {
			retry = s.waitFor(s.reqLog, now, ru, 1, s.reqs)
			if tu+reserve > s.toks {
				retry = max(retry, s.waitFor(s.tokLog, now, tu, reserve, s.toks))
			}
		}
		ru, reqReset = s.sum(&s.reqLog, now)
		tu, tokReset = s.sum(&s.tokLog, now)
		reqRem, tokRem = math.Max(s.reqs-ru, 0), math.Max(s.toks-tu, 0)
	}
	if ok {
		s.accepted++
	} else {
		s.rejected++
	}
	s.mu.Unlock()

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(int(s.reqs)))
	h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(int(s.toks)))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(int(reqRem)))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.Itoa(int(tokRem)))
	h.Set("X-Ratelimit-Reset-Requests", reqReset.Round(time.Millisecond).String())
	h.Set("X-Ratelimit-Reset-Tokens", tokReset.Round(time.Millisecond).String())
	if !ok {
		retry = max(retry, time.Millisecond)
		h.Set("Retry-After-Ms", strconv.Itoa(int(retry.Milliseconds())+1))
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	if s.latency > 0 {
		time.Sleep(s.latency)
	}
	used := float64(prompt + min(s.completion, body.MaxTokens))
	s.mu.Lock()
	counted := reserve
	if s.refund {
		// The reply's usage replaces the reservation.
		counted = used
		if s.bucket {
			s.tokLevel = math.Min(s.toks, s.tokLevel+reserve-used)
		} else {
			tokEntry.n = used
		}
	}
	s.served = append(s.served, entry{now, counted})
	s.end = time.Now()
	s.mu.Unlock()
	_, _ = fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m-1","choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		prompt, int(used)-prompt, int(used))
}

// utilisation is the share of the physical limit the run used: requests ÷
// request rate or tokens (as the server counts them) ÷ token rate,
// whichever is larger, over the time
// from the first request to the last reply. (A full window or bucket at
// the start lets more through than the rate, so a short run may pass 100 %.)
func (s *limitServer) utilisation() (frac float64, accepted, rejected int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	span := s.end.Sub(s.first).Seconds() / s.window.Seconds()
	if span <= 0 {
		return 0, s.accepted, s.rejected
	}
	toks := 0.0
	for _, e := range s.served {
		toks += e.n
	}
	return max(float64(len(s.served))/(s.reqs*span), toks/(s.toks*span)), s.accepted, s.rejected
}

// steady is utilisation after the first window: what the pace holds once
// the start's full window or bucket is spent.
func (s *limitServer) steady() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := s.first.Add(s.window)
	span := s.end.Sub(from).Seconds() / s.window.Seconds()
	if span <= 0 {
		return 0
	}
	n, toks := 0.0, 0.0
	for _, e := range s.served {
		if !e.t.Before(from) {
			n++
			toks += e.n
		}
	}
	return max(n/(s.reqs*span), toks/(s.toks*span))
}
