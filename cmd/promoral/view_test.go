package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// promoral view serves a finished run on loopback, prints where, answers,
// and stops cleanly on Ctrl-C; a folder that is not a run is an error that
// says what to do.
func TestViewCommand(t *testing.T) {
	dir := killStudy(t, 8)
	out := filepath.Join(t.TempDir(), "run")
	if _, stderr, code := runCLI(t, "apply", "-q", filepath.Join(dir, "configs/run.yaml"), "--out", out); code != 0 {
		t.Fatalf("apply: %d %s", code, stderr)
	}

	cmd := cli(t, "view", out, "--port", "0", "--annotator", "ana")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no address printed: %v", err)
	}
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	if url == "" || !strings.Contains(line, "killme (16 cases)") {
		t.Fatalf("printed %q", line)
	}
	res, err := http.Get(url + "api/meta")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Runs []struct {
			Cases int `json:"cases"`
		} `json:"runs"`
		Annotator string `json:"annotator"`
	}
	json.NewDecoder(res.Body).Decode(&meta)
	res.Body.Close()
	if len(meta.Runs) != 1 || meta.Runs[0].Cases != 16 || meta.Annotator != "ana" {
		t.Errorf("meta: %+v", meta)
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("view did not stop cleanly on Ctrl-C: %v", err)
		}
	case <-time.After(20 * time.Second): // a guard against a hang, not a speed target
		t.Fatal("view did not stop on Ctrl-C")
	}

	_, stderr, code := runCLI(t, "view", dir)
	if code == 0 || !strings.Contains(words(stderr), "no results.parquet") || !strings.Contains(stderr, "promoral apply") {
		t.Errorf("view of a config folder: exit %d, %q", code, stderr)
	}
}
