package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/hub/hubtest"
)

const publishToken = "hf_CliPublishTokenMustNotShow987654321"

// publishRun applies a small study (two models, a judged task) and
// returns its run folder.
func publishRun(t *testing.T) string {
	cfg := filepath.Join(studytest.WriteTree(t, studytest.ShardTree()), "configs/run.yaml")
	dir := filepath.Join(t.TempDir(), "demo")
	studytest.Apply(t, studytest.MustLoad(t, cfg), dir)
	return dir
}

func TestPublishDryRunListsFilesAndSendsNothing(t *testing.T) {
	s := hubtest.New(t)
	dir := publishRun(t)
	out, errs, code := runCLI(t, "publish", "--dry-run", dir, "hf://datasets/my-org/demo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The run's own files, its card, and the Every Eval Ever records
	// publish makes from it.
	for _, want := range []string{"would send", "results.parquet", "calls.parquet", "metrics.parquet", "manifest.json", "README.md", "eee/data/", "_samples.jsonl", "nothing was sent"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 80 {
			t.Errorf("line wider than 80 columns: %q", l)
		}
	}
	if s.Count() != 0 {
		t.Errorf("the dry run asked the hub %d times", s.Count())
	}
	_, errs, code = runCLI(t, "publish", dir, "hf://spaces/my-org/demo")
	if code != 1 || !strings.Contains(errs, "hf://datasets/my-org/demo") {
		t.Errorf("a space address: exit %d, %s", code, errs)
	}
}

func TestPublishCLI(t *testing.T) {
	s := hubtest.New(t)
	s.Token = publishToken
	dir := publishRun(t)
	work := t.TempDir()
	// Without a token: exit 1, saying which variable to set.
	_, errs, code := runIn(t, work, "publish", dir, "hf://datasets/my-org/demo")
	if code != 1 || !strings.Contains(errs, "set HF_TOKEN") {
		t.Fatalf("without a token: exit %d, %s", code, errs)
	}
	// The token from .env in the working folder, as for the providers' keys.
	if err := os.WriteFile(filepath.Join(work, ".env"), []byte("HF_TOKEN="+publishToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out1, errs1, code := runIn(t, work, "publish", dir, "hf://datasets/my-org/demo")
	sent := regexp.MustCompile(`(\d+) files changed, 0 unchanged`).FindStringSubmatch(out1)
	if code != 0 || !strings.Contains(out1, "published "+dir) || sent == nil {
		t.Fatalf("publish: exit %d\n%s\n%s", code, out1, errs1)
	}
	t.Logf("first publish:\n%s%s", out1, errs1)
	if b, _, ok := s.File("my-org/demo", "README.md"); !ok || !bytes.Contains(b, []byte("config_name: results")) {
		t.Errorf("the card: %q", b)
	}
	// Again, from HF_TOKEN in the environment: nothing to send.
	t.Setenv("HF_TOKEN", publishToken)
	out2, errs2, code := runCLI(t, "publish", dir, "hf://datasets/my-org/demo")
	if code != 0 || !strings.Contains(out2, "already holds these "+sent[1]+" files:") || !strings.Contains(out2, "nothing sent, no commit") {
		t.Fatalf("second publish: exit %d\n%s\n%s", code, out2, errs2)
	}
	// A refused token: exit 1, the hub's refusal, never the token.
	t.Setenv("HF_TOKEN", publishToken+"x")
	out3, errs3, code := runCLI(t, "publish", dir, "hf://datasets/my-org/demo")
	if code != 1 || !strings.Contains(errs3, "refused the token from HF_TOKEN (HTTP 401") {
		t.Errorf("a refused token: exit %d, %s", code, errs3)
	}
	for _, text := range []string{out1, errs1, out2, errs2, out3, errs3} {
		if strings.Contains(text, publishToken) {
			t.Errorf("the output shows the token:\n%s", text)
		}
	}
	s.Do(func(s *hubtest.Server) {
		if len(s.Commits) != 1 {
			t.Fatalf("commits: %+v", s.Commits)
		}
		// The Every Eval Ever records went with the run's files.
		var records, samples int
		for _, f := range s.Commits[0].Files {
			if strings.HasPrefix(f, "eee/data/") && strings.HasSuffix(f, "_samples.jsonl") {
				samples++
			} else if strings.HasPrefix(f, "eee/data/") && strings.HasSuffix(f, ".json") {
				records++
			}
		}
		if records == 0 || records != samples {
			t.Errorf("Every Eval Ever files committed: %d records, %d samples files in %v", records, samples, s.Commits[0].Files)
		}
		if bytes.Contains(s.Received.Bytes(), []byte(publishToken)) {
			t.Errorf("a request body carried the token")
		}
	})
}
