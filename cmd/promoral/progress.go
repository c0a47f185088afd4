package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/promoral/promoral/internal/wrap"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/spec"
)

// isTerminal reports whether w is a character device (a terminal), without
// a dependency: progress bars there, plain lines anywhere else.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// paceWindow is how far back the speed looks: long enough to smooth over
// slow cases, short enough to follow a rate limit that changes.
const paceWindow = 2 * time.Minute

type sample struct {
	t time.Time
	n int64
}

// pace measures speed from live cases only (those that made a new model
// call). On a resume thousands of journaled cases finish in a second; counted
// as speed they would promise an ETA many times too short.
type pace struct {
	samples []sample // oldest first; the first is at or before the window's start
}

func newPace(start time.Time, live int64) *pace {
	return &pace{samples: []sample{{start, live}}}
}

func (p *pace) observe(now time.Time, live int64) {
	p.samples = append(p.samples, sample{now, live})
	cut := now.Add(-paceWindow)
	i := 0
	for i+1 < len(p.samples) && !p.samples[i+1].t.After(cut) {
		i++
	}
	p.samples = p.samples[i:]
}

// rate is live cases per second over the window, 0 before any finished.
func (p *pace) rate() float64 {
	first, last := p.samples[0], p.samples[len(p.samples)-1]
	el := last.t.Sub(first.t).Seconds()
	if el <= 0 || last.n <= first.n {
		return 0
	}
	return float64(last.n-first.n) / el
}

// line is one line of the display: a model's cases, or for a judge-only
// model the cases it judges. Its fields are read and written by one
// goroutine only (the updater); what the bars show is published to them as
// finished strings (text), so no lock is ever held across a call into the
// bar library.
type line struct {
	m     *engine.ModelStats
	name  string
	judge bool  // progress counts judged cases
	pace  *pace // new calls (not journal replays) over time
	// finished: every case of the line (and every case it judges) is done;
	// the rate is frozen at that moment and no longer falls.
	finished bool
	frozen   float64
	// stopping: the run was interrupted and waits for its calls in
	// flight; stopped: the run is over (or interrupted); the frames say so
	// rather than promise an ETA.
	stopping, stopped bool
	text              atomic.Pointer[barText]
}

// barText is what a bar's decorators draw, computed by the updater: the
// key figures, and the details as parts kept whole.
type barText struct {
	key    string
	detail []string
}

func newViews(stats []*engine.ModelStats, start time.Time) []*line {
	out := make([]*line, 0, len(stats))
	for _, m := range stats {
		v := &line{m: m, name: m.Name, judge: m.Total == 0 && m.JudgeTotal > 0}
		v.pace = newPace(start, m.NewCalls())
		out = append(out, v)
	}
	return out
}

// counts are the cases finished and in all, of this line's kind.
func (v *line) counts() (done, total int64) {
	if v.judge {
		return v.m.JudgeDone.Load(), v.m.JudgeTotal
	}
	return v.m.Done.Load(), v.m.Total
}

// allDone: the line's cases and the cases its model judges are finished.
func (v *line) allDone() bool {
	m := v.m
	return m.Done.Load() >= m.Total && m.JudgeDone.Load() >= m.JudgeTotal
}

func (v *line) observe(now time.Time) {
	if v.finished {
		return
	}
	v.pace.observe(now, v.m.NewCalls())
	if v.allDone() {
		v.finished, v.frozen = true, v.pace.rate()
	}
}

// stop marks the final frame: the run is over.
func (v *line) stop(now time.Time) {
	v.observe(now)
	v.stopped = true
}

// rate is new calls per second, frozen when the line finished.
func (v *line) rate() float64 {
	if v.finished {
		return v.frozen
	}
	return v.pace.rate()
}

// eta is the time left: the calls still to make (by strategy: a case of a
// loop makes several) at the live pace of calls. "done" when finished,
// "stopped" when the run ended first, "?" until a new call has finished.
func (v *line) eta() string {
	switch {
	case v.finished:
		return "done"
	case v.stopped:
		return "stopped"
	case v.stopping:
		return "stopping"
	}
	r := v.rate()
	if r <= 0 {
		return "?"
	}
	return shortDuration(time.Duration(v.m.CallsLeft() / r * float64(time.Second)))
}

// key is what must stay visible at 80 columns: cases, live rate, ETA, cost.
func (v *line) key() string {
	done, total := v.counts()
	if v.judge {
		return fmt.Sprintf("judged %d/%d  %s  ETA %s  %s", v.m.Judged.Load(), total, rateText(v.rate()), v.eta(), costText(v.m))
	}
	return fmt.Sprintf("%d/%d  %s  ETA %s  %s", done, total, rateText(v.rate()), v.eta(), costText(v.m))
}

// costText is the spend so far, or a note that it is unknown for a model
// without a price.
func costText(m *engine.ModelStats) string {
	if m.NoPrice {
		return "$?"
	}
	return fmt.Sprintf("$%.2f", m.Cost())
}

// errText counts failed cases and, apart, failed attempts sent again.
func errText(fails, retried int64) string {
	s := spec.Plural(int(fails), "error", "errors")
	if retried > 0 {
		s += fmt.Sprintf(", %d retried", retried)
	}
	return s
}

// servedText says how many calls were served without a request: replies
// an earlier apply journaled, and duplicates (a request identical to one
// this apply sent, answered by that one reply).
func servedText(m *engine.ModelStats) string {
	s := fmt.Sprintf("%d from the journal", m.JournalHits())
	if d := m.Duplicates.Load(); d > 0 {
		s += fmt.Sprintf(", %d duplicates", d)
	}
	return s
}

// detail is the rest: calls, journal hits, errors, tokens, and the judging
// (verdicts, failures, cases never judged because they failed first).
func (v *line) detail() string { return strings.Join(v.details(), "  ") }

// details are detail's parts, each to be kept whole on a line.
func (v *line) details() []string {
	m := v.m
	fails := m.Fails.Load()
	if v.judge {
		fails = m.JudgeFails.Load()
	}
	parts := []string{
		fmt.Sprintf("%s (%s)", spec.Plural(int(m.Calls.Load()), "call", "calls"), servedText(m)),
		errText(fails, m.Retried.Load()),
		human(m.Tokens.Load()) + " tokens",
	}
	if !v.judge && m.JudgeTotal > 0 {
		s := fmt.Sprintf("judged %d/%d", m.Judged.Load(), m.JudgeTotal)
		if f := m.JudgeFails.Load(); f > 0 {
			s += fmt.Sprintf(" (%s judging)", spec.Plural(int(f), "error", "errors"))
		}
		parts = append(parts, s)
	}
	if n := m.JudgeSkipped.Load(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d not judged (the case failed first)", n))
	}
	for _, r := range m.Rate().Parts() {
		parts = append(parts, r)
	}
	return parts
}

// detailLines lays the details out under a bar: two spaces in, parts two
// apart, a part that does not fit on a line of its own (cut only when it
// is wider than the line).
func detailLines(parts []string, width int) []string {
	var out []string
	cur := ""
	for _, p := range parts {
		switch {
		case cur == "":
			cur = "  " + p
		case width <= 0 || utf8.RuneCountInString(cur)+2+utf8.RuneCountInString(p) <= width:
			cur += "  " + p
		default:
			out = append(out, fit(cur, width))
			cur = "  " + p
		}
	}
	return append(out, fit(cur, width))
}

// plain is the whole status, for logs (wrapped to 80 columns where printed).
func (v *line) plain() string {
	done, total := v.counts()
	what := fmt.Sprintf("%d/%d cases", done, total)
	if v.judge {
		what = fmt.Sprintf("%d/%d judged (%d finished)", v.m.Judged.Load(), total, done)
	}
	return fmt.Sprintf("%s  %s  %s  %s live  ETA %s",
		what, v.detail(), costText(v.m), rateText(v.rate()), v.eta())
}

// publish computes the bar's texts for the decorators to read.
func (v *line) publish() {
	v.text.Store(&barText{key: v.key(), detail: v.details()})
}

// rateText writes calls per second, or per minute or hour when slower, so
// the figure never rounds to 0.0.
func rateText(r float64) string {
	switch {
	case r <= 0:
		return "-/s"
	case r >= 1:
		return fmt.Sprintf("%.1f/s", r)
	case r*60 >= 1:
		return fmt.Sprintf("%.1f/min", r*60)
	}
	return fmt.Sprintf("%.1f/h", r*3600)
}

// shortDuration is a duration in at most two units: 45s, 18m05s, 2h05m, 3d04h.
func shortDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 48*3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

func human(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// progress shows live bars on a terminal and plain periodic lines
// elsewhere (CI logs, files), until stop is closed. It owns w meanwhile:
// the notes handed to scr are printed by it, and an interrupted run's
// stopping state is shown until the end.
func progress(w io.Writer, stats []*engine.ModelStats, scr *screen, stop, done chan struct{}) {
	defer close(done)
	if !isTerminal(w) {
		plainProgress(w, stats, scr, stop, time.Second, 10*time.Second)
		return
	}
	bars(w, stats, scr, stop, 0)
}

// plainProgress samples every tick and prints every model's line every
// print interval.
func plainProgress(w io.Writer, stats []*engine.ModelStats, scr *screen, stop chan struct{}, tick, print time.Duration) {
	if scr == nil {
		scr = newScreen(w, true)
	}
	views := newViews(stats, time.Now())
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	var stopSaid bool
	// notes prints the notes handed to the screen, and the stopping state
	// when it begins, again with every model's lines (again), and last.
	notes := func(now time.Time, final, again bool) {
		msgs, st := scr.take()
		if final {
			msgs = append(msgs, scr.end()...)
		}
		for _, m := range msgs {
			fmt.Fprintln(w, m)
		}
		if st == nil {
			return
		}
		for _, v := range views {
			v.stopping = true
		}
		if !stopSaid || final || again {
			fmt.Fprintln(w, wrapNote(st.text(now, final)))
			stopSaid = true
		}
	}
	for {
		say := func(now time.Time) {
			for _, v := range views {
				name := v.name
				if v.judge {
					name += " (judge)"
				}
				fmt.Fprintln(w, wrapNote(fmt.Sprintf("%s  %s: %s", now.Format("15:04:05"), name, v.plain())))
			}
		}
		select {
		case <-stop:
			// The last lines are the final state.
			now := time.Now()
			for _, v := range views {
				v.stop(now)
			}
			say(now)
			notes(now, true, false)
			return
		case now := <-t.C:
			for _, v := range views {
				v.observe(now)
			}
			notes(now, false, false)
			if now.Sub(last) < print {
				continue
			}
			last = now
			say(now)
			notes(now, false, true)
		case <-scr.wake:
			notes(time.Now(), false, false)
		}
	}
}

// nameWidth caps the name column so the bar keeps room at 80 columns.
const nameWidth = 18

// bars draws two lines per model: the name, a bar, and the key figures
// (cases, live rate, ETA, cost), which stay whole at 80 columns; under it
// the details, cut to the terminal's width. width 0 means the terminal's
// width; tests pass one.
//
// No lock: this goroutine alone samples the counters and computes each
// bar's texts, publishes them through an atomic pointer, then moves the
// bars. The decorators, which mpb calls while a bar waits for its render,
// only load that pointer, so a call into mpb can never wait on them.
func bars(w io.Writer, stats []*engine.ModelStats, scr *screen, stop chan struct{}, width int) {
	if scr == nil {
		scr = newScreen(w, true)
	}
	views := newViews(stats, time.Now())
	opts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithRefreshRate(250 * time.Millisecond)}
	if width > 0 {
		opts = append(opts, mpb.WithWidth(width), mpb.WithAutoRefresh())
	}
	p := mpb.New(opts...)
	col := 0
	for _, v := range views {
		col = max(col, min(utf8.RuneCountInString(v.name), nameWidth))
	}
	bs := make([]*mpb.Bar, len(views))
	for i, v := range views {
		v.publish()
		_, total := v.counts()
		label := pad(fit(v.name, nameWidth), col)
		bs[i] = p.New(total, mpb.BarStyle().Lbound("[").Rbound("]"),
			mpb.BarWidth(30),
			mpb.PrependDecorators(decor.Name(label)),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
				return v.text.Load().key
			})),
			mpb.BarExtender(mpb.BarFillerFunc(func(out io.Writer, st decor.Statistics) error {
				for _, l := range detailLines(v.text.Load().detail, st.AvailableWidth) {
					if _, err := io.WriteString(out, l+"\n"); err != nil {
						return err
					}
				}
				return nil
			}), false),
		)
	}
	// The stopping state is a bar of its own under the others, added when
	// the run is interrupted; its text is wrapped to the terminal's width.
	var status *mpb.Bar
	var statusText atomic.Pointer[[]string]
	statusLines := func(width int) []string {
		ls := *statusText.Load()
		if width > 0 && width < noteWidth {
			ls = wrap.Words(strings.Join(ls, " "), width)
		}
		return ls
	}
	update := func(now time.Time, final bool) {
		msgs, st := scr.take()
		if final {
			msgs = append(msgs, scr.end()...)
		}
		for _, m := range msgs {
			// Printed above the bars at the next redraw, never erased; from
			// the first column, whatever the terminal echoed (^C).
			fmt.Fprint(p, "\r"+m+"\n")
		}
		if st != nil {
			ls := strings.Split(wrapNote(st.text(now, final)), "\n")
			statusText.Store(&ls)
			if status == nil {
				status = p.MustAdd(1, mpb.BarFillerFunc(func(out io.Writer, s decor.Statistics) error {
					_, err := io.WriteString(out, statusLines(s.AvailableWidth)[0])
					return err
				}), mpb.BarExtender(mpb.BarFillerFunc(func(out io.Writer, s decor.Statistics) error {
					for _, l := range statusLines(s.AvailableWidth)[1:] {
						if _, err := io.WriteString(out, l+"\n"); err != nil {
							return err
						}
					}
					return nil
				}), false), mpb.BarFillerTrim())
			}
		}
		for i, v := range views {
			v.stopping = st != nil
			if final {
				v.stop(now)
			} else {
				v.observe(now)
			}
			v.publish()
			done, _ := v.counts()
			bs[i].SetCurrent(done)
		}
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			// The last frame is the final state: finished bars complete at
			// their total, the others stop where they are.
			update(time.Now(), true)
			for i, v := range views {
				if done, total := v.counts(); total > 0 && done >= total {
					bs[i].SetTotal(total, true)
				} else {
					bs[i].Abort(false)
				}
			}
			if status != nil {
				status.Abort(false)
			}
			p.Wait()
			return
		case now := <-t.C:
			update(now, false)
		case <-scr.wake:
			update(time.Now(), false)
		}
	}
}

// fit cuts s to n columns (runes: names and figures here are narrow
// characters), marking the cut with an ellipsis.
func fit(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// pad fills s with spaces to n columns.
func pad(s string, n int) string {
	return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s)))
}
