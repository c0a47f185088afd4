package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun is a promoral process on a pseudo-terminal of 80 columns: its
// progress draws bars, as at a user's terminal.
type ptyRun struct {
	cmd    *exec.Cmd
	tty    *os.File
	out    syncBuf
	exited chan struct{}
	read   chan struct{} // closed when all the process wrote has been read
	code   int
}

func startPTY(t *testing.T, args ...string) *ptyRun {
	t.Helper()
	r := &ptyRun{cmd: cli(t, args...), exited: make(chan struct{}), read: make(chan struct{})}
	tty, err := pty.StartWithSize(r.cmd, &pty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	r.tty = tty
	go func() { defer close(r.read); io.Copy(&r.out, tty) }() // ends with EIO once the process is gone
	go func() {
		err := r.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		}
		close(r.exited)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.exited
		tty.Close()
		<-r.read
	})
	return r
}

// waitExit waits for the process to end; a process still running after the
// bound is a hang (the bound is generous: the runs take well under a second).
func (r *ptyRun) waitExit(t *testing.T, what string) {
	t.Helper()
	select {
	case <-r.exited:
		<-r.read
	case <-time.After(20 * time.Second):
		r.cmd.Process.Signal(os.Interrupt) // no dump needed: the test failed
		tail := stripANSI(r.out.String())
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		t.Fatalf("%s: apply still running after 20 s (a hang); the terminal shows:\n%s", what, tail)
	}
}

// ptyServer is an OpenAI-compatible server that answers after a short
// random delay, so cases finish while the bars draw; hold makes it keep
// every request until the client gives up.
func ptyServer(t *testing.T, hold *atomic.Bool, calls *atomic.Int64) *httptest.Server {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body) // read to the end, so a client gone cancels the request's context
		if hold.Load() {
			select {
			case <-r.Context().Done():
			case <-gone:
			}
			return
		}
		time.Sleep(time.Duration(100+rand.IntN(60)) * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-v1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Confidence: 0.9\nAnswer: wrong"}}],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`)
	}))
	t.Cleanup(func() { close(gone); srv.Close() })
	return srv
}

// ptyStudy is a study of three models on that server, each with a
// one-call strategy and a loop.
func ptyStudy(t *testing.T, url string, items int) string {
	dir := killStudy(t, items)
	var run strings.Builder
	run.WriteString("name: terminal\nmodels:\n")
	for _, m := range []string{"alpha", "bravo-with-a-long-model-name", "charlie", "delta", "echo", "foxtrot"} {
		fmt.Fprintf(&run, "  - {name: %s, provider: openai-compatible, model: %s, base_url: %s/v1, price: {input: 1, output: 2}}\n", m, m, url)
	}
	run.WriteString("tasks: [toy]\nstrategies: [once, loop]\nsettings: {concurrency: 4}\n")
	p := filepath.Join(dir, "configs/terminal.yaml")
	if err := os.WriteFile(p, []byte(run.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// At a terminal (bars, 80 columns), apply with six models exits and prints
// its summary, run after run: the progress display never holds it. Each run
// lasts a few seconds, so the bars' updates and mpb's renders meet several
// times (they tick every 200 and 250 ms); four runs go at once to keep the
// test short.
func TestApplyAtATerminalAlwaysExits(t *testing.T) {
	var hold atomic.Bool
	var calls atomic.Int64
	srv := ptyServer(t, &hold, &calls)
	config := ptyStudy(t, srv.URL, 30)
	const runs, together = 12, 4
	for wave := 0; wave < runs/together; wave++ {
		rs := make([]*ptyRun, together)
		for i := range rs {
			rs[i] = startPTY(t, "apply", config, "--out", filepath.Join(t.TempDir(), "out"))
		}
		for i, r := range rs {
			n := wave*together + i + 1
			r.waitExit(t, fmt.Sprintf("run %d of %d", n, runs))
			screen := stripANSI(r.out.String())
			if r.code != 0 || !strings.Contains(screen, "terminal: 360 cases") {
				t.Fatalf("run %d: exit %d; the terminal shows:\n%s", n, r.code, screen)
			}
			if !strings.Contains(screen, "[") || !strings.Contains(screen, "ETA") {
				t.Fatalf("run %d drew no progress bars:\n%s", n, screen)
			}
		}
	}
	t.Logf("%d runs, %d calls", runs, calls.Load())
}

// Ctrl-C at the terminal stops apply, which says so and exits 130; when the
// calls in flight never answer, a second Ctrl-C cuts them off and ends it.
func TestCtrlCAtATerminalStopsApply(t *testing.T) {
	var hold atomic.Bool
	var calls atomic.Int64
	srv := ptyServer(t, &hold, &calls)
	config := ptyStudy(t, srv.URL, 30)
	hold.Store(true)
	out := filepath.Join(t.TempDir(), "out")
	r := startPTY(t, "apply", config, "--out", out, "--grace", "1m")
	waitUntil(t, "requests in flight", func() bool { return calls.Load() >= 3 })
	r.tty.Write([]byte{3}) // Ctrl-C: the terminal sends SIGINT to apply
	waitUntil(t, "the first interrupt's notice", func() bool {
		return strings.Contains(stripANSI(r.out.String()), "interrupted: starting no new calls")
	})
	select {
	case <-r.exited:
		t.Fatalf("apply exited before its grace period though its calls were in flight:\n%s", stripANSI(r.out.String()))
	default:
	}
	r.tty.Write([]byte{3})
	r.waitExit(t, "after the second Ctrl-C")
	screen := stripANSI(r.out.String())
	if r.code != exitInterrupted || !strings.Contains(screen, "interrupted after") || !strings.Contains(screen, "cut off") {
		t.Fatalf("exit %d; the terminal shows:\n%s", r.code, screen)
	}
}

// The summary names each model's endpoint (provider and base URL, never
// the credentials a URL may hold) and says when a model's cost is unknown.
func TestSummaryNamesEndpoints(t *testing.T) {
	var hold atomic.Bool
	var calls atomic.Int64
	srv := ptyServer(t, &hold, &calls)
	dir := killStudy(t, 2)
	u := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1)
	run := fmt.Sprintf(`name: ends
models:
  - {name: priced, provider: openai-compatible, model: a, base_url: "%s/v1?key=s3cret", price: {input: 1, output: 2}}
  - {name: free, provider: openai-compatible, model: b, base_url: %s/v1}
tasks: [toy]
strategies: [once]
`, u, srv.URL)
	p := filepath.Join(dir, "configs/ends.yaml")
	os.WriteFile(p, []byte(run), 0o644)
	stdout, stderr, code := runCLI(t, "apply", "-q", p, "--out", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"model priced: openai-compatible at " + srv.URL + "/v1\n",
		"model free: openai-compatible at " + srv.URL + "/v1;\n    no price: its cost is unknown",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout+stderr, "s3cret") {
		t.Errorf("a credential in the output:\n%s\n%s", stdout, stderr)
	}
	if !strings.Contains(words(stderr), "model free has no price") {
		t.Errorf("no note about the unpriced model:\n%s", stderr)
	}
	out, _, _ := runCLI(t, "plan", p, "--out", filepath.Join(dir, "out2"))
	if !strings.Contains(out, "no price for free: its cost is unknown") {
		t.Errorf("plan has no note about the unpriced model:\n%s", out)
	}
}
