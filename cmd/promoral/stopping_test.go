package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/promoral/promoral/pipeline/engine"
)

// vt is the little of a terminal that apply's output needs, to read the
// screen a user sees rather than the bytes sent to it: printing with the
// line wrapping at the last column, carriage return, line feed, cursor up
// (ESC [ n A) and erasing (ESC [ J, ESC [ K). Other sequences are skipped.
// Lines scrolled off the top stay, as in a terminal's scrollback; the
// cursor cannot go above the visible rows.
type vt struct {
	cols, rows int
	lines      [][]rune
	soft       []bool // the line went on past the last column, wrapped by the terminal
	row, col   int
}

func newVT(cols, rows int) *vt {
	return &vt{cols: cols, rows: rows, lines: [][]rune{nil}, soft: []bool{false}}
}

func (v *vt) put(r rune) {
	if v.col >= v.cols { // the deferred wrap of a terminal
		v.soft[v.row] = true
		v.lineFeed()
		v.col = 0
	}
	l := v.lines[v.row]
	for len(l) < v.col {
		l = append(l, ' ')
	}
	if v.col < len(l) {
		l[v.col] = r
	} else {
		l = append(l, r)
	}
	v.lines[v.row] = l
	v.col++
}

func (v *vt) lineFeed() {
	v.row++
	if v.row == len(v.lines) {
		v.lines, v.soft = append(v.lines, nil), append(v.soft, false)
	}
}

// top is the first visible row.
func (v *vt) top() int { return max(0, len(v.lines)-v.rows) }

func (v *vt) write(s string) {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j == len(s) {
				return
			}
			param := s[i+2 : j]
			switch s[j] {
			case 'A':
				n, err := strconv.Atoi(param)
				if err != nil {
					n = 1
				}
				v.row = max(v.top(), v.row-n)
			case 'J':
				if param == "" || param == "0" {
					if v.col < len(v.lines[v.row]) {
						v.lines[v.row] = v.lines[v.row][:v.col]
					}
					v.lines, v.soft = v.lines[:v.row+1], v.soft[:v.row+1]
					v.soft[v.row] = false
				}
			case 'K':
				if param == "2" {
					v.lines[v.row] = nil
				} else if v.col < len(v.lines[v.row]) {
					v.lines[v.row] = v.lines[v.row][:v.col]
				}
				v.soft[v.row] = false
			}
			i = j + 1
		case c == '\r':
			v.col = 0
			i++
		case c == '\n': // a pty's ONLCR: a line feed returns the carriage too
			v.lineFeed()
			v.col = 0
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			v.put(r)
			i += n
		}
	}
}

// screen is every line, scrollback included, without trailing spaces; a
// line the terminal wrapped is joined again, as it was written, so a line
// past the last column shows as one.
func (v *vt) screen() []string {
	var out []string
	joined := false
	for i, l := range v.lines {
		s := string(l)
		if !v.soft[i] {
			s = strings.TrimRight(s, " ")
		}
		if joined {
			out[len(out)-1] += s
		} else {
			out = append(out, s)
		}
		joined = v.soft[i]
	}
	return out
}

// render plays the bytes a terminal received and returns its lines.
func render(out string) []string {
	v := newVT(80, 24)
	v.write(out)
	return v.screen()
}

// The emulation does what a terminal does with a redraw: it moves up and
// erases the frame before, so only the last frame stays.
func TestVTRedraw(t *testing.T) {
	got := render("above\r\nframe 1 a\r\nframe 1 b\r\n\x1b[2A\x1b[Jframe 2 a\r\nframe 2 b\r\n")
	want := []string{"above", "frame 2 a", "frame 2 b", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("screen %q, want %q", got, want)
	}
	if got := render(strings.Repeat("x", 85) + "\r\nnext"); len(got) != 2 || len(got[0]) != 85 || got[1] != "next" {
		t.Fatalf("a line of 85 at 80 columns: %q", got)
	}
}

// slowServer answers an OpenAI-compatible request only once released: its
// calls take as long as the test holds them (seconds).
func slowServer(t *testing.T, calls *atomic.Int64) (*httptest.Server, func()) {
	release := make(chan struct{})
	var once atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-v1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Confidence: 0.9\nAnswer: wrong"}}],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`)
	}))
	open := func() {
		if once.CompareAndSwap(false, true) {
			close(release)
		}
	}
	t.Cleanup(func() { open(); srv.Close() })
	return srv, open
}

// Ctrl-C during slow calls, at a terminal of 80 columns: the notice stays
// on the screen above the bars, a stopping state under them says what the
// run waits for and how much of the grace is left, through every redraw of
// the wait, and both are on the screen when apply exits; no frame of the
// bars is left behind, and no line passes 80 columns.
func TestCtrlCShowsStoppingUntilExit(t *testing.T) {
	var calls atomic.Int64
	srv, release := slowServer(t, &calls)
	dir := killStudy(t, 20)
	run := fmt.Sprintf(`name: slow
models:
  - {name: alpha, provider: openai-compatible, model: a, base_url: %s/v1, price: {input: 1, output: 2}}
  - {name: bravo, provider: openai-compatible, model: b, base_url: %s/v1, price: {input: 1, output: 2}}
tasks: [toy]
strategies: [once]
settings: {concurrency: 2}
`, srv.URL, srv.URL)
	config := filepath.Join(dir, "configs/slow.yaml")
	if err := os.WriteFile(config, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	r := startPTY(t, "apply", config, "--out", out, "--grace", "1m")
	waitUntil(t, "four calls in flight", func() bool { return calls.Load() >= 4 })
	r.tty.Write([]byte{3}) // Ctrl-C

	const notice = "promoral: interrupted: starting no new calls;"
	check := func(when string, lines []string, want ...string) {
		t.Helper()
		text := strings.Join(lines, "\n")
		for _, w := range want {
			if n := strings.Count(text, w); n != 1 {
				t.Fatalf("%s: the screen shows %q %d times, want once:\n%s", when, w, n, text)
			}
		}
		for _, l := range lines {
			if utf8.RuneCountInString(l) > 80 && !strings.Contains(l, dir) {
				t.Fatalf("%s: a line of %d columns: %q", when, utf8.RuneCountInString(l), l)
			}
		}
	}
	waitUntil(t, "the notice and the stopping state", func() bool {
		s := strings.Join(render(r.out.String()), "\n")
		return strings.Contains(s, notice) && strings.Contains(s, "of the grace left")
	})
	// Through several redraws (every 250 ms) of the grace wait.
	for i := 0; i < 6; i++ {
		time.Sleep(300 * time.Millisecond)
		lines := render(r.out.String())
		if i == 0 && os.Getenv("DUMP") != "" {
			os.WriteFile(os.Getenv("DUMP"), []byte(r.out.String()), 0o644)
		}
		check(fmt.Sprintf("sample %d of the wait", i+1), lines, notice, "stopping: waiting for the 4 call(s) in flight", "; Ctrl-C again cuts them off", "alpha ", "bravo ")
		if !strings.Contains(strings.Join(lines, "\n"), "ETA stopping") {
			t.Fatalf("the bars do not say they are stopping:\n%s", strings.Join(lines, "\n"))
		}
	}
	select {
	case <-r.exited:
		t.Fatal("apply exited during its grace period though its calls were in flight")
	default:
	}
	release() // the calls in flight answer; apply journals them and ends
	r.waitExit(t, "after the calls in flight answered")
	lines := render(r.out.String())
	if os.Getenv("DUMP") != "" {
		os.WriteFile(os.Getenv("DUMP")+".screen", []byte(strings.Join(lines, "\n")), 0o644)
	}
	if r.code != exitInterrupted {
		t.Fatalf("exit %d:\n%s", r.code, strings.Join(lines, "\n"))
	}
	check("at exit", lines, notice, "stopped after the interruption", "interrupted after 4 of 40 cases", "4 call(s) in flight at the interruption finished")
}

// Off a terminal the notes and the stopping state are plain lines: the
// notice, what the run waits for, and the last state at the end.
func TestPlainProgressSaysStopping(t *testing.T) {
	m := &engine.ModelStats{Name: "m", Total: 10}
	var buf syncBuf
	scr := newScreen(&buf, true)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		plainProgress(&buf, []*engine.ModelStats{m}, scr, stop, 5*time.Millisecond, time.Hour)
	}()
	scr.Interrupted(time.Minute, func() int { return 2 })
	scr.Note("promoral: interrupted: starting no new calls")
	waitUntil(t, "the stopping state", func() bool { return strings.Contains(buf.String(), "stopping: waiting for the 2 call(s) in flight") })
	close(stop)
	<-done
	scr.Note("after the end")
	out := buf.String()
	for _, want := range []string{"promoral: interrupted: starting no new calls\n", "ETA stopped", "stopped after the interruption", "stopped after the interruption; the summary says what was journaled\nafter the end\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > 80 && strings.HasPrefix(l, "stopping") {
			t.Errorf("a line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
}
