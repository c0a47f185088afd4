package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline"
)

func TestStatusLine(t *testing.T) {
	m := &pipeline.ModelStats{Name: "gpt-4.1", Total: 100, Start: time.Unix(1000, 0)}
	m.Done.Store(25)
	m.Calls.Store(40)
	m.Cached.Store(10)
	m.Fails.Store(1)
	m.Tokens.Store(12345)
	// 25 cases in 50 s = 0.5 cases/s; 75 left -> 150 s.
	got := statusLine(m, time.Unix(1050, 0))
	want := "25/100 cases  40 calls (10 cached)  1 errors  12k tokens  $0.00  0.5 cases/s  ETA 2m30s"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
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
	go progress(&buf, nil, stop, done)
	close(stop)
	<-done
	if strings.Contains(buf.String(), "\x1b[") {
		t.Errorf("escape codes off a terminal: %q", buf.String())
	}
}
