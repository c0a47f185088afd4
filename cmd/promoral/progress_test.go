package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/promoral/promoral/pipeline/engine"
)

var t0 = time.Unix(1_000_000, 0)

// On a resume 2,000 journaled cases finish in a second; then live cases
// come at one a second. The ETA must follow the live pace (990 cases left
// at 1/s), not the replay's (2,010 cases in 11 s would promise 5 s).
func TestETAComesFromLiveCasesOnly(t *testing.T) {
	m := &engine.ModelStats{Name: "gpt-4.1", Total: 3000}
	v := newViews([]*engine.ModelStats{m}, t0)[0]
	m.Done.Store(2000)
	m.Calls.Store(2000)
	m.Cached.Store(2000)
	v.observe(t0.Add(time.Second))
	if got := v.eta(); got != "?" {
		t.Errorf("ETA after journal replays only = %q, want ?", got)
	}
	for i := int64(1); i <= 10; i++ {
		m.Done.Store(2000 + i)
		m.Calls.Store(2000 + i)
		v.observe(t0.Add(time.Second + time.Duration(i)*time.Second))
	}
	// 10 live cases in the 11 s since the start: 0.91/s; 990 left.
	if got, want := v.eta(), shortDuration(time.Duration(990/(10.0/11)*float64(time.Second))); got != want {
		t.Errorf("ETA = %q, want %q", got, want)
	}
	if r := v.rate(); r < 0.9 || r > 0.92 {
		t.Errorf("rate %.3f, want 10/11", r)
	}
}

// The pace follows a change of speed within its window.
func TestPaceFollowsTheLastWindow(t *testing.T) {
	p := newPace(t0, 0)
	n := int64(0)
	now := t0
	for i := 0; i < 300; i++ { // 5 minutes at 2 cases/s
		now = now.Add(time.Second)
		n += 2
		p.observe(now, n)
	}
	for i := 0; i < 180; i++ { // then 3 minutes at 0.5/s
		now = now.Add(time.Second)
		if i%2 == 0 {
			n++
		}
		p.observe(now, n)
	}
	if r := p.rate(); r < 0.49 || r > 0.51 {
		t.Errorf("rate %.3f, want 0.5 (the last %v)", r, paceWindow)
	}
	if len(p.samples) > int(paceWindow/time.Second)+2 {
		t.Errorf("%d samples kept for a %v window", len(p.samples), paceWindow)
	}
}

func TestPlainLineAndUnits(t *testing.T) {
	m := &engine.ModelStats{Name: "gpt-4.1", Total: 100}
	v := newViews([]*engine.ModelStats{m}, t0)[0]
	m.Done.Store(25)
	m.Calls.Store(35)
	m.Cached.Store(10)
	m.Fails.Store(1)
	m.Retried.Store(68)
	m.Tokens.Store(12345)
	v.observe(t0.Add(50 * time.Second))
	// 25 new calls in 50 s; 75 cases of a call each left.
	want := "25/100 cases  35 calls (10 from the journal)  1 error, 68 retried  12k tokens  $0.00  30.0/min live  ETA 2m30s"
	if got := v.plain(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for d, want := range map[time.Duration]string{45 * time.Second: "45s", 605 * time.Second: "10m05s", 2*time.Hour + 5*time.Minute: "2h05m", 75 * time.Hour: "3d03h"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
	for r, want := range map[float64]string{0: "-/s", 2.25: "2.2/s", 0.5: "30.0/min", 0.001: "3.6/h"} {
		if got := rateText(r); got != want {
			t.Errorf("rateText(%v) = %q, want %q", r, got, want)
		}
	}
}

// A model that only judges is shown with the cases it judges.
func TestJudgeOnlyModelHasItsOwnLine(t *testing.T) {
	subject := &engine.ModelStats{Name: "gpt-4.1", Total: 10}
	judge := &engine.ModelStats{Name: "command-a"}
	judge.JudgeTotal = 10
	judge.Judged.Store(4)
	judge.JudgeDone.Store(7)
	judge.JudgeSkipped.Store(3)
	judge.Calls.Store(4)
	vs := newViews([]*engine.ModelStats{subject, judge}, t0)
	if !vs[1].judge || !strings.HasPrefix(vs[1].plain(), "4/10 judged (7 finished)  4 calls") || !strings.HasPrefix(vs[1].key(), "judged 4/10") ||
		!strings.Contains(vs[1].plain(), "3 not judged (the case failed first)") {
		t.Errorf("judge line: %q / %q", vs[1].key(), vs[1].plain())
	}
	if vs[0].judge || !strings.HasPrefix(vs[0].key(), "0/10") {
		t.Errorf("subject line: %q", vs[0].key())
	}
}

// At 80 columns every model keeps a bar and its cases, rate, ETA and cost;
// the details go on a line of their own, cut to the width.
func TestBarsFitEightyColumns(t *testing.T) {
	a := &engine.ModelStats{Name: "claude-sonnet-4-20250514-thinking", Total: 200000}
	a.Done.Store(123456)
	a.Live.Store(3456)
	a.Calls.Store(1234567)
	a.Cached.Store(1000000)
	a.Fails.Store(12345)
	a.Tokens.Store(987654321)
	a.JudgeTotal = 200000
	a.Judged.Store(100000)
	a.Retried.Store(12345)
	j := &engine.ModelStats{Name: "command-a-03-2025"}
	j.JudgeTotal = 3900
	j.Judged.Store(1200)
	j.JudgeDone.Store(1300)
	var buf bytes.Buffer
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); bars(&buf, []*engine.ModelStats{a, j}, nil, stop, 80) }()
	time.Sleep(300 * time.Millisecond) // let a few live cases finish at least one sample apart
	a.Calls.Add(100)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-done
	// The last frame, as a terminal shows it.
	var last []string
	for _, l := range render(buf.String()) {
		if l != "" {
			last = append(last, l)
		}
	}
	if len(last) < 5 {
		t.Fatalf("want 5 lines, got:\n%s", strings.Join(last, "\n"))
	}
	last = last[len(last)-5:]
	for i, l := range last {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line %d is %d columns: %q", i, n, l)
		}
	}
	for _, i := range []int{0, 3} {
		l := last[i]
		for _, part := range []string{"[", "]", "ETA ", "$0.00"} {
			if !strings.Contains(l, part) {
				t.Errorf("bar line lacks %q: %q", part, l)
			}
		}
		if !strings.Contains(l, "/s") && !strings.Contains(l, "/min") && !strings.Contains(l, "/h") {
			t.Errorf("bar line lacks a rate: %q", l)
		}
	}
	if !strings.Contains(last[0], "123456/200000") || !strings.Contains(last[3], "judged 1200/3900") {
		t.Errorf("counts: %q / %q", last[0], last[3])
	}
	// The details go on as many lines as they need, each part whole.
	if !strings.Contains(last[1], "1234667 calls") || !strings.Contains(last[1], "12345 errors, 12345 retried") || !strings.Contains(last[2], "  987.7M tokens  judged 100000/200000") {
		t.Errorf("detail lines: %q", last[1:3])
	}
}

// A part of the details never loses its end to the width: the 429s keep
// their denominator on the next line.
func TestDetailLinesKeepPartsWhole(t *testing.T) {
	parts := []string{"1234 calls (0 from the journal)", "3 errors, 167 retried", "98k tokens", "limited by requests, 100 % of the limit", "167 × 429 of 1234 attempts"}
	got := detailLines(parts, 80)
	want := []string{
		"  1234 calls (0 from the journal)  3 errors, 167 retried  98k tokens",
		"  limited by requests, 100 % of the limit  167 × 429 of 1234 attempts",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := detailLines([]string{strings.Repeat("x", 100)}, 80); utf8.RuneCountInString(got[0]) != 80 {
		t.Errorf("a part wider than the line is not cut to it: %q", got)
	}
}

// Off a terminal, progress is plain lines (none before the first tick) and
// stops when told.
func TestProgressIsPlainOffATerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Fatal("a buffer is not a terminal")
	}
	var buf bytes.Buffer
	stop, done := make(chan struct{}), make(chan struct{})
	go progress(&buf, nil, nil, stop, done)
	close(stop)
	<-done
	if strings.Contains(buf.String(), "\x1b[") {
		t.Errorf("escape codes off a terminal: %q", buf.String())
	}
}

func TestPlainProgressPrintsEveryModel(t *testing.T) {
	m := &engine.ModelStats{Name: "bot", Total: 4}
	j := &engine.ModelStats{Name: "judge-bot"}
	j.JudgeTotal = 4
	var buf syncBuf
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		plainProgress(&buf, []*engine.ModelStats{m, j}, nil, stop, 10*time.Millisecond, 30*time.Millisecond)
	}()
	for i := 0; !strings.Contains(buf.String(), "judge-bot (judge): 0/4 judged (0 finished)"); i++ {
		if i == 3000 {
			t.Fatalf("no judge line printed:\n%s", buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-done
	if !strings.Contains(buf.String(), "bot: 0/4 cases") {
		t.Errorf("no line for the model:\n%s", buf.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stripANSI removes terminal escapes, to read what a terminal would show.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// With one-call cases first, the ETA counts the calls still to make (the
// loop's cases make three each, as planned), not the cases: 50 one-call
// cases in 50 s leave 50 + 100×3 calls, 350 s at a call a second; counted
// in cases it would have said 150 s.
func TestETACountsCallsLeftNotCases(t *testing.T) {
	m := &engine.ModelStats{Name: "m", Total: 200}
	m.Expect("once", 100, 1, 1)
	m.Expect("loop", 100, 2, 4)
	v := newViews([]*engine.ModelStats{m}, t0)[0]
	for i := 1; i <= 50; i++ {
		m.Done.Add(1)
		m.Calls.Add(1)
		m.Finished("once", 1)
		v.observe(t0.Add(time.Duration(i) * time.Second))
	}
	if got, want := v.eta(), shortDuration(350*time.Second); got != want {
		t.Errorf("ETA %q, want %q", got, want)
	}
}

// A finished model's rate is frozen at its finish: it does not fall while
// the other models run on.
func TestFinishedRateStopsFalling(t *testing.T) {
	m := &engine.ModelStats{Name: "m", Total: 10}
	v := newViews([]*engine.ModelStats{m}, t0)[0]
	for i := 1; i <= 10; i++ {
		m.Done.Add(1)
		m.Calls.Add(1)
		v.observe(t0.Add(time.Duration(i) * time.Second))
	}
	at := v.rate()
	v.observe(t0.Add(100 * time.Second))
	if v.rate() != at || at < 0.99 || at > 1.01 || v.eta() != "done" {
		t.Errorf("rate %v at the finish, %v later (want 1/s both), ETA %q", at, v.rate(), v.eta())
	}
}

// The last plain lines are the final state: all cases done shows done/total
// equal and "ETA done"; a run that stopped early says so, not "ETA ?".
func TestLastPlainLinesAreTheFinalState(t *testing.T) {
	m := &engine.ModelStats{Name: "bot", Total: 4}
	s := &engine.ModelStats{Name: "stopped-bot", Total: 4}
	var buf syncBuf
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		plainProgress(&buf, []*engine.ModelStats{m, s}, nil, stop, 10*time.Millisecond, time.Hour)
	}()
	m.Done.Store(4)
	s.Done.Store(2)
	close(stop)
	<-done
	out := buf.String()
	if !strings.Contains(out, "bot: 4/4 cases") || !strings.Contains(out, "ETA done") ||
		!strings.Contains(out, "stopped-bot: 2/4 cases") || !strings.Contains(out, "ETA stopped") || strings.Contains(out, "ETA ?") {
		t.Errorf("final lines:\n%s", out)
	}
}

// The last frame of the bars is the final state too.
func TestLastFrameIsTheFinalState(t *testing.T) {
	m := &engine.ModelStats{Name: "bot", Total: 4}
	var buf bytes.Buffer
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); bars(&buf, []*engine.ModelStats{m}, nil, stop, 80) }()
	m.Done.Store(4)
	close(stop)
	<-done
	lines := strings.Split(strings.TrimRight(stripANSI(buf.String()), "\n"), "\n")
	if len(lines) < 2 || !strings.Contains(lines[len(lines)-2], "4/4") || !strings.Contains(lines[len(lines)-2], "ETA done") {
		t.Errorf("last frame:\n%s", strings.Join(lines, "\n"))
	}
}

// A model without a price shows its cost as unknown, not $0.00.
func TestUnpricedCostIsUnknown(t *testing.T) {
	m := &engine.ModelStats{Name: "local", Total: 4}
	m.NoPrice = true
	v := newViews([]*engine.ModelStats{m}, t0)[0]
	if strings.Contains(v.key(), "$0.00") || !strings.Contains(v.key(), "$?") {
		t.Errorf("key %q", v.key())
	}
}
