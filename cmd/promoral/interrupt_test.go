package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// proc is a promoral process whose stderr is watched line by line.
type proc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	mu     sync.Mutex
	errb   bytes.Buffer
	lines  chan string
	waited chan struct{}
}

func startCLI(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: cli(t, args...), lines: make(chan string, 1024), waited: make(chan struct{})}
	p.cmd.Stdout = &p.out
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.errb.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.wait()
	})
	return p
}

// waitLine waits for a stderr line containing s.
func (p *proc) waitLine(t *testing.T, s string) {
	t.Helper()
	waitUntil(t, "stderr line "+strconv.Quote(s), func() bool {
		for {
			select {
			case l := <-p.lines:
				if strings.Contains(l, s) {
					return true
				}
			default:
				return false
			}
		}
	})
}

func (p *proc) wait() int {
	select {
	case <-p.waited:
	default:
		p.cmd.Wait()
		close(p.waited)
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.String()
}

var interruptedRE = regexp.MustCompile(`interrupted after (\d+) of (\d+) cases`)

// Ctrl-C (or SIGTERM) stops new calls, lets the ones on the wire finish and
// journals them: the summary counts only the cases that finished, the exit
// is 130, and the next apply sends only what was never answered, each
// request once.
func TestInterruptFinishesCallsInFlight(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			fs := newFaultServer(t)
			dir, cfg := faultStudy(t, fs, 40, "")
			fs.setFault(func(string, int) string { return "hold" })
			out := filepath.Join(dir, "out")
			p := startCLI(t, "apply", "-q", cfg, "--out", out)
			waitUntil(t, "four calls on the wire", func() bool { _, _, held := fs.counts(); return held == 4 })
			p.cmd.Process.Signal(sig)
			p.waitLine(t, "interrupted: starting no new calls;")
			fs.open()
			if code := p.wait(); code != exitInterrupted {
				t.Fatalf("exit %d\n%s\n%s", code, p.out.String(), p.stderr())
			}
			stdout := p.out.String()
			m := interruptedRE.FindStringSubmatch(stdout)
			if m == nil || m[1] != "4" || m[2] != "40" || !strings.Contains(stdout, "4 call(s) in flight at the interruption finished and were journaled") {
				t.Fatalf("summary:\n%s", stdout)
			}
			if total, answered, _ := fs.counts(); total != 4 || answered != 4 {
				t.Fatalf("server: %d requests, %d answered; want the 4 in flight only", total, answered)
			}
			if _, err := os.Stat(filepath.Join(out, "results.parquet")); err == nil {
				t.Error("an interrupted apply wrote results")
			}
			fs.setFault(func(string, int) string { return "" })
			stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out)
			if code != 0 || !strings.Contains(stdout, "40 cases, 40 calls (36 new, 4 cached), 0 errors") {
				t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
			}
			for body, n := range fs.seen {
				if n != 1 {
					t.Fatalf("a request was sent %d times: %.80s", n, body)
				}
			}
		})
	}
}

// A second Ctrl-C cuts the calls off instead of waiting: the run ends at
// once, says how many calls it cut, and the next apply sends them again
// (they were settled in the journal, not left to look like a kill).
func TestSecondInterruptCutsCallsOff(t *testing.T) {
	fs := newFaultServer(t)
	dir, cfg := faultStudy(t, fs, 20, "")
	fs.setFault(func(string, int) string { return "hold" })
	out := filepath.Join(dir, "out")
	p := startCLI(t, "apply", "-q", cfg, "--out", out, "--grace", "1h")
	waitUntil(t, "four calls on the wire", func() bool { _, _, held := fs.counts(); return held == 4 })
	p.cmd.Process.Signal(syscall.SIGINT)
	p.waitLine(t, "starting no new calls")
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(); code != exitInterrupted {
		t.Fatalf("exit %d\n%s", code, p.stderr())
	}
	stdout := p.out.String()
	if !strings.Contains(stdout, "interrupted after 0 of 20 cases") || !strings.Contains(stdout, "4 were cut off without a reply") {
		t.Fatalf("summary:\n%s", stdout)
	}
	fs.setFault(func(string, int) string { return "" })
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 || !strings.Contains(stdout, "20 new") || strings.Contains(stdout+stderr, "were in flight when an earlier apply was killed") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// After kill -9 the next apply knows, from the intents journaled before
// each request, how many calls were in flight and had to be sent again.
func TestKill9ReportsTheCallsThatWereInFlight(t *testing.T) {
	fs := newFaultServer(t)
	dir, cfg := faultStudy(t, fs, 30, "")
	var answered int
	fs.setFault(func(string, int) string {
		fs.mu.Lock() // handle holds no lock while asking
		defer fs.mu.Unlock()
		answered++
		if answered > 6 {
			return "hold"
		}
		return ""
	})
	out := filepath.Join(dir, "out")
	p := startCLI(t, "apply", "-q", cfg, "--out", out)
	waitUntil(t, "four calls on the wire", func() bool { _, _, held := fs.counts(); return held == 4 })
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait()
	fs.setFault(func(string, int) string { return "" })
	fs.open()
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 || !strings.Contains(stdout, "30 cases, 30 calls (24 new, 6 cached), 0 errors") ||
		!strings.Contains(words(stdout), "4 call(s) were in flight when an earlier apply was killed; 4 of them were sent again") ||
		!strings.Contains(stderr, "4 call(s) were in flight when an earlier apply was killed") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Reported once: the journal has settled them.
	stdout, _, _ = runCLI(t, "apply", "-q", cfg, "--out", out)
	if strings.Contains(stdout, "in flight when an earlier apply was killed") {
		t.Fatalf("reported again:\n%s", stdout)
	}
}
