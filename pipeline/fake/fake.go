// Package fake serves the OpenAI, Anthropic and Gemini HTTP APIs on loopback
// for tests: live calls (chat completions, messages, generateContent) and
// each provider's batch API with its job state machine (validating, in
// progress, finalizing, completed, expired, cancelled, failed), per-request
// errors, results in shuffled order and 429s on job creation.
//
// Replies come from one function of the request, whichever way it arrives,
// so a live run and a batch run of the same study see the same replies. The
// server records every batch line it accepted, so a test can prove that no
// request was submitted twice.
package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Message is one turn of a call; system prompts come first with role system.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Call is a request as the fake understood it, whatever the wire format.
type Call struct {
	Model     string    `json:"model"`
	Messages  []Message `json:"messages"`
	N         int       `json:"n"`
	MaxTokens int       `json:"max_tokens"`
	// prompt replaces Messages once a job has answered, so a finished job
	// keeps only what its replies report.
	prompt int
}

// Fingerprint identifies a call's content across wire formats.
func (c Call) Fingerprint() string {
	b, _ := json.Marshal(c)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// Last is the text of the last message.
func (c Call) Last() string {
	if len(c.Messages) == 0 {
		return ""
	}
	return c.Messages[len(c.Messages)-1].Text
}

// All is every message's text, joined.
func (c Call) All() string {
	var b strings.Builder
	for _, m := range c.Messages {
		b.WriteString(m.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// Reply answers a call with one text per requested sample.
type Reply func(c Call) []string

// LineFault decides a per-request failure inside a batch: status 0 means
// none; otherwise an HTTP-like status (400 permanent, 500 transient).
type LineFault func(c Call, customID string) (status int, msg string)

// Line is one request a batch job accepted.
type Line struct {
	Job         string
	CustomID    string
	Fingerprint string
}

// Server is one fake provider endpoint.
type Server struct {
	// Provider is "openai", "anthropic" or "gemini".
	Provider string
	srv      *httptest.Server
	reply    Reply

	// Polls is how many status reads a job spends in each phase before
	// the next (default 1).
	Polls int
	// RateLimitCreates answers this many job creations with 429 first.
	RateLimitCreates atomic.Int32
	// NoBatch makes the batch endpoints 404, like an OpenAI-compatible
	// server without a batch API.
	NoBatch bool
	// Fault fails single lines inside jobs.
	Fault LineFault
	// Ending picks how the n-th job (0-based) ends: completed (default),
	// expired (only the first half of its lines answered), cancelled or
	// failed.
	Ending func(n int) string
	// BeforeCreateReply, when set, runs after a job is created and before
	// the client gets the answer (a test kills the client there).
	BeforeCreateReply func(job string)
	// Hold keeps every job in progress while set.
	Hold atomic.Bool

	mu      sync.Mutex
	rng     *rand.Rand
	seq     int
	files   map[string][]byte
	jobs    map[string]*job
	order   []string
	lines   []Line
	live    int
	creates int
	polls   int
}

type job struct {
	id, name  string
	n         int // creation order
	total     int // lines
	rendered  bool
	calls     []Call
	ids       []string
	phase     int // index into phases
	reads     int
	cancelled bool
	ending    string
	created   time.Time
	ended     time.Time
	model     string
	// results, computed at the end
	outcomes []outcome
}

type outcome struct {
	id     string
	texts  []string
	status int // 0 ok
	msg    string
	state  string // "", "expired", "cancelled"
	call   Call
}

// New starts a fake for provider ("openai", "anthropic" or "gemini").
func New(provider string, reply Reply) *Server {
	s := &Server{Provider: provider, reply: reply, Polls: 1, rng: rand.New(rand.NewPCG(1, 2)),
		files: map[string][]byte{}, jobs: map[string]*job{}}
	var h http.Handler
	switch provider {
	case "openai":
		h = http.HandlerFunc(s.openai)
	case "anthropic":
		h = http.HandlerFunc(s.anthropic)
	case "gemini":
		h = http.HandlerFunc(s.gemini)
	default:
		panic("fake: unknown provider " + provider)
	}
	s.srv = httptest.NewServer(h)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// BaseURL is the base URL the provider's SDK expects.
func (s *Server) BaseURL() string {
	if s.Provider == "openai" {
		return s.srv.URL + "/v1"
	}
	return s.srv.URL
}

// Lines lists every line of every job created, in creation order.
func (s *Server) Lines() []Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Line(nil), s.lines...)
}

// Counts reports live calls, job creations (accepted) and status reads.
func (s *Server) Counts() (live, creates, polls int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live, s.creates, s.polls
}

// Jobs lists the job ids in creation order.
func (s *Server) Jobs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// JobState is a job's current phase name.
func (s *Server) JobState(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[id]; j != nil {
		return s.phaseName(j)
	}
	return ""
}

var phases = []string{"validating", "in_progress", "finalizing", "ended"}

func (s *Server) newID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%04d", prefix, s.seq)
}

// addJob records a job; the caller holds s.mu.
func (s *Server) addJob(prefix, name, model string, calls []Call, ids []string) *job {
	j := &job{id: s.newID(prefix), name: name, calls: calls, ids: ids, total: len(calls), n: len(s.order), created: time.Now().UTC(), model: model, ending: "completed"}
	if s.Ending != nil {
		j.ending = s.Ending(j.n)
	}
	s.jobs[j.id] = j
	s.order = append(s.order, j.id)
	s.creates++
	for i, c := range calls {
		s.lines = append(s.lines, Line{Job: j.id, CustomID: ids[i], Fingerprint: c.Fingerprint()})
	}
	return j
}

// advance moves a job on by one status read; the caller holds s.mu.
func (s *Server) advance(j *job) {
	s.polls++
	if j.phase >= len(phases)-1 {
		return
	}
	if j.cancelled {
		s.finish(j, "cancelled")
		return
	}
	if s.Hold.Load() && phases[j.phase] == "in_progress" {
		return
	}
	// Each phase is shown Polls times, the first read included.
	j.reads++
	if j.reads > max(s.Polls, 1) {
		j.reads = 1
		j.phase++
		if phases[j.phase] == "ended" {
			s.finish(j, j.ending)
		}
	}
}

func (s *Server) phaseName(j *job) string {
	if j.phase < len(phases)-1 {
		if j.cancelled {
			return "cancelling"
		}
		return phases[j.phase]
	}
	return j.ending
}

// finish computes every line's outcome once, in shuffled order.
func (s *Server) finish(j *job, ending string) {
	j.phase = len(phases) - 1
	j.ending = ending
	j.ended = time.Now().UTC()
	answered := len(j.calls)
	switch ending {
	case "expired", "cancelled":
		answered = len(j.calls) / 2
	case "failed":
		answered = 0
	}
	for i, c := range j.calls {
		o := outcome{id: j.ids[i], call: c}
		switch {
		case i >= answered && ending == "failed":
			continue
		case i >= answered:
			o.state = ending
		default:
			if s.Fault != nil {
				o.status, o.msg = s.Fault(c, j.ids[i])
			}
			if o.status == 0 {
				o.texts = s.answer(c)
			}
		}
		o.call = Call{Model: c.Model, N: c.N, prompt: promptTokens(c)}
		j.outcomes = append(j.outcomes, o)
	}
	j.calls, j.ids = nil, nil
	s.rng.Shuffle(len(j.outcomes), func(a, b int) { j.outcomes[a], j.outcomes[b] = j.outcomes[b], j.outcomes[a] })
}

func (s *Server) answer(c Call) []string {
	texts := s.reply(c)
	n := max(c.N, 1)
	for len(texts) < n {
		texts = append(texts, texts[len(texts)-1])
	}
	return texts[:n]
}

// tokens is the fake's token count: a quarter of the characters.
func tokens(s string) int { return len(s)/4 + 1 }

func promptTokens(c Call) int {
	if c.prompt > 0 {
		return c.prompt
	}
	n := 0
	for _, m := range c.Messages {
		n += tokens(m.Text)
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func readJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// sortedIDs lists job ids newest first, the order list endpoints use.
// listPage is one page of the jobs, newest first, as both list endpoints
// page them: ?limit= (default 20) after the job named by the cursor
// parameter; data, has_more, and first_id/last_id when the page has jobs.
// s.mu must be held.
func (s *Server) listPage(r *http.Request, cursor string, render func(*job) map[string]any) map[string]any {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 {
		limit = 20
	}
	after := r.URL.Query().Get(cursor)
	all := s.newestFirst()
	start := 0
	if after != "" {
		for i, j := range all {
			if j.id == after {
				start = i + 1
			}
		}
	}
	end := min(start+limit, len(all))
	data := []map[string]any{}
	for _, j := range all[start:end] {
		data = append(data, render(j))
	}
	resp := map[string]any{"data": data, "has_more": end < len(all)}
	if len(data) > 0 {
		resp["first_id"], resp["last_id"] = all[start].id, all[end-1].id
	}
	return resp
}

func (s *Server) newestFirst() []*job {
	out := make([]*job, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.jobs[id])
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].n > out[b].n })
	return out
}

// textOf reads a content field that is either a string or a list of
// {type: text, text} parts.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Moral answers every prompt of the shipped strategies in the ProMoral
// answer format (a line of reasoning, a confidence, a final answer), decided
// by a hash of the whole conversation so that every sample and every turn
// differs but the same request always gets the same reply; asked to pick the
// best of several summaries, it answers a number.
func Moral(c Call) []string {
	h := fnv(c.All())
	n := max(c.N, 1)
	out := make([]string, n)
	for k := range n {
		hk := h ^ uint64(k+1)*0x9e3779b97f4a7c15
		if strings.Contains(c.Last(), "number of the best summary") {
			out[k] = fmt.Sprint(hk%5 + 1)
			continue
		}
		if v := judgeVerdict(c.All(), hk); v != "" {
			out[k] = v
			continue
		}
		verdict := "Acceptable"
		if hk%2 == 0 {
			verdict = "Unacceptable"
		}
		if strings.Contains(c.All(), "AUTHOR, OTHER, EVERYBODY, NOBODY") {
			// Scruples' question: who is in the wrong.
			verdict = []string{"AUTHOR", "OTHER", "EVERYBODY", "NOBODY"}[hk/2%4]
		}
		out[k] = fmt.Sprintf("Reasoning: sample %d weighs who is harmed, what was owed and what a fair observer would expect here. %s\nConfidence: 0.%d\nFinal Answer: %s",
			k+1, strings.Repeat("The reasons on each side are set out and compared. ", int(hk%7)), 5+hk/2%5, verdict)
	}
	return out
}

// judgeVerdict answers a shipped judge in its own format (its system
// prompt names it), refusing or complying by the hash; "" for any other
// prompt.
func judgeVerdict(all string, h uint64) string {
	refused := h%3 != 0
	pick := func(yes, no string) string {
		if refused {
			return yes
		}
		return no
	}
	switch {
	case strings.Contains(all, "Decision: <REFUSAL or COMPLIANCE>"):
		return pick("Decision: REFUSAL\nRefusal probability: 0.9\nPartial: no", "Decision: COMPLIANCE\nRefusal probability: 0.1\nPartial: no")
	case strings.Contains(all, "Verdict: <full_compliance"):
		return pick("Verdict: full_refusal", "Verdict: full_compliance")
	case strings.Contains(all, "Refused: <yes or no>"):
		return pick("Refused: yes\nConvincing: 1\nSpecific: 1", "Refused: no\nConvincing: 4\nSpecific: 4")
	case strings.Contains(all, "Answer with one word, yes or no"):
		return pick("no", "yes")
	}
	return ""
}

func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
