package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/promoral/promoral/pipeline"
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

// statusLine is one model's progress: cases, calls, cache hits, errors,
// tokens, cost, rate and ETA.
func statusLine(m *pipeline.ModelStats, now time.Time) string {
	done := m.Done.Load()
	el := now.Sub(m.Start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	eta := "?"
	if rate > 0 && m.Total > done {
		eta = (time.Duration(float64(m.Total-done)/rate) * time.Second).Round(time.Second).String()
	} else if m.Total == done {
		eta = "done"
	}
	return fmt.Sprintf("%d/%d cases  %d calls (%d cached)  %d errors  %s tokens  $%.2f  %.1f cases/s  ETA %s",
		done, m.Total, m.Calls.Load(), m.Cached.Load(), m.Fails.Load(), human(m.Tokens.Load()), m.Cost(), rate, eta)
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
// elsewhere (CI logs, files), until stop is closed.
func progress(w io.Writer, stats []*pipeline.ModelStats, stop, done chan struct{}) {
	defer close(done)
	if !isTerminal(w) {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				for _, m := range stats {
					fmt.Fprintf(w, "%s  %s: %s\n", now.Format("15:04:05"), m.Name, statusLine(m, now))
				}
			}
		}
	}
	p := mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(250*time.Millisecond), mpb.WithWidth(30))
	bars := make([]*mpb.Bar, len(stats))
	width := 0
	for _, m := range stats {
		width = max(width, len(m.Name))
	}
	for i, m := range stats {
		m := m
		bars[i] = p.New(m.Total, mpb.BarStyle().Lbound("[").Rbound("]"),
			mpb.PrependDecorators(decor.Name(m.Name, decor.WC{W: width + 1, C: decor.DindentRight}), decor.Percentage(decor.WC{W: 5})),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return statusLine(m, time.Now()) })),
		)
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	update := func() {
		for i, m := range stats {
			bars[i].SetCurrent(m.Done.Load())
		}
	}
	for {
		select {
		case <-stop:
			update()
			for _, b := range bars {
				if !b.Completed() {
					b.Abort(false)
				}
			}
			p.Wait()
			return
		case <-t.C:
			update()
		}
	}
}
