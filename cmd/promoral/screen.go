package main

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/promoral/promoral/internal/wrap"
)

// screen is apply's terminal while a run goes. The progress display owns
// it: every other line (a warning of the engine, the interrupt's notice)
// is handed to the display, which prints it above its bars, rather than
// written between two of its redraws, where the next one would erase it.
// Without a display (--quiet), or once it has ended, a line is written
// straight away.
type screen struct {
	w io.Writer

	mu      sync.Mutex
	live    bool // a display takes the lines
	notes   []string
	partial []byte // a line written in pieces, until its newline
	stop    *stopState
	wake    chan struct{} // a note or a state to show now
}

// stopState is an interrupted run waiting for its calls in flight.
type stopState struct {
	at       time.Time
	grace    time.Duration
	inFlight func() int
	cutting  bool // a second Ctrl-C cut the calls off
}

func newScreen(w io.Writer, live bool) *screen {
	return &screen{w: w, live: live, wake: make(chan struct{}, 1)}
}

// poke wakes the display.
func (s *screen) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Note shows one message (it may hold several lines), wrapped to 80
// columns.
func (s *screen) Note(msg string) { s.note(wrapNote(msg)) }

func (s *screen) note(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live {
		fmt.Fprintln(s.w, msg)
		return
	}
	s.notes = append(s.notes, msg)
	s.poke()
}

// Write takes whole lines (the engine's log) as notes.
func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.partial = append(s.partial, p...)
	var lines []string
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(s.partial[:i]))
		s.partial = s.partial[i+1:]
	}
	s.mu.Unlock()
	for _, l := range lines {
		s.note(l)
	}
	return len(p), nil
}

// Interrupted starts the stopping state: the run waits up to grace for the
// calls in flight.
func (s *screen) Interrupted(grace time.Duration, inFlight func() int) {
	s.mu.Lock()
	s.stop = &stopState{at: time.Now(), grace: grace, inFlight: inFlight}
	s.mu.Unlock()
	s.poke()
}

// Cutting: the calls in flight are being cut off.
func (s *screen) Cutting() {
	s.mu.Lock()
	if s.stop != nil {
		s.stop.cutting = true
	}
	s.mu.Unlock()
	s.poke()
}

// take returns the notes not shown yet and the stopping state, for the
// display.
func (s *screen) take() ([]string, *stopState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.notes
	s.notes = nil
	if s.stop == nil {
		return n, nil
	}
	st := *s.stop
	return n, &st
}

// end: the display is gone; later notes are written straight away, and
// the ones it had not shown are returned.
func (s *screen) end() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live = false
	n := s.notes
	s.notes = nil
	return n
}

// text is the stopping state in words: what the run waits for and how
// long it still may.
func (st *stopState) text(now time.Time, final bool) string {
	n := st.inFlight()
	calls := fmt.Sprintf("%d call(s) in flight", n)
	switch {
	case final:
		return "stopped after the interruption; the summary says what was journaled"
	case st.cutting:
		return fmt.Sprintf("stopping: cutting off the %s", calls)
	case n == 0:
		return "stopping: no call in flight; finishing"
	}
	left := max(0, st.grace-now.Sub(st.at)).Round(time.Second)
	return fmt.Sprintf("stopping: waiting for the %s (%s of the grace left) so their replies are journaled; Ctrl-C again cuts them off", calls, left)
}

// noteWidth is the width notes and the stopping state are wrapped to.
const noteWidth = 80

// wrapNote fits a message to the terminal's 80 columns.
func wrapNote(msg string) string { return wrap.Block(msg, noteWidth) }
