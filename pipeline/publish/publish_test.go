package publish_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/hub"
	"github.com/promoral/promoral/pipeline/hub/hubtest"
	"github.com/promoral/promoral/pipeline/publish"
)

// token is recognisable, so a test can look for it in everything sent
// and said.
const token = "hf_PublishTestTokenDoNotLeak0123456789"

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func random(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	b[0] = 0 // binary, as Parquet is
	return b
}

// runFolder writes a run folder as apply and report leave it: the three
// Parquet files (random bytes: the hub does not read them), the manifest,
// a metric table, the report with a PNG and an SVG figure, and files a
// publish leaves out (the journal, the generations folder).
func runFolder(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "demo")
	write(t, filepath.Join(dir, "results.parquet"), random(1, 300<<10))
	write(t, filepath.Join(dir, "calls.parquet"), random(2, 120<<10))
	write(t, filepath.Join(dir, "metrics.parquet"), random(3, 20<<10))
	write(t, filepath.Join(dir, "manifest.json"), []byte(`{"run":"demo","version":"0.1.0","config_hash":"abc123","cases":12,"calls_new":30,"calls_cached":6,"errors":1,"unparsed":2,"finished":"2026-01-02T03:04:05Z","strategies":["zero_shot","self_correct"],"models":[{"name":"m1","provider":"openai","model":"gpt-x"}],"tasks":[{"name":"ethics","items":6}]}`))
	write(t, filepath.Join(dir, "demo_reliability.csv"), []byte("block,model,bin\ndemo,m1,0.1\n"))
	write(t, filepath.Join(dir, "report.html"), []byte("<!doctype html><title>report</title>"))
	write(t, filepath.Join(dir, "report.md"), []byte("# report\n\n![](figures/acc.png)\n"))
	write(t, filepath.Join(dir, "figures", "acc.png"), random(4, 30<<10))
	write(t, filepath.Join(dir, "figures", "acc.svg"), []byte("<svg></svg>"))
	write(t, filepath.Join(dir, "journal.jsonl"), []byte(`{"kind":"intent"}`+"\n"))
	write(t, filepath.Join(dir, ".gen", "1", "results.parquet"), []byte("old"))
	return dir
}

var repo = hub.Repo{Type: "dataset", ID: "my-org/demo-run"}

func fake(t *testing.T) (*hubtest.Server, *hub.Client, *[]string) {
	s := hubtest.New(t)
	s.Token = token
	s.Do(func(s *hubtest.Server) { s.ReadToken = "hf_readOnlyTokenOfTheFake000000000" })
	c := hub.FromEnv()
	c.Token, c.TokenFrom = token, "HF_TOKEN"
	var log []string
	return s, c, &log
}

func push(t *testing.T, c *hub.Client, dir string, log *[]string) (*publish.Plan, *hub.PushResult, error) {
	t.Helper()
	p, err := publish.New(dir, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Push(context.Background(), repo, p.Files, hub.PushOptions{Message: "publish demo", Log: func(s string) { *log = append(*log, s) }})
	return p, res, err
}

// checkRepo says whether the repository holds every file of the plan with
// its bytes, Parquet and PNG files through the LFS store.
func checkRepo(t *testing.T, s *hubtest.Server, p *publish.Plan) {
	t.Helper()
	for _, f := range p.Files {
		got, lfs, ok := s.File(repo.ID, f.Path)
		want := f.Data
		if f.Local != "" {
			want, _ = os.ReadFile(f.Local)
		}
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: the hub holds %d bytes (present %v), want the %d of %s", f.Path, len(got), ok, len(want), f.Local)
		}
		if wantLFS := strings.HasSuffix(f.Path, ".parquet") || strings.HasSuffix(f.Path, ".png"); lfs != wantLFS {
			t.Errorf("%s: kept as an LFS object %v, want %v", f.Path, lfs, wantLFS)
		}
	}
}

func TestPlanListsTheRunsFilesAndTheCard(t *testing.T) {
	dir := runFolder(t)
	p, err := publish.New(dir, repo, []publish.Extra{{Local: filepath.Join(dir, "missing"), Repo: "eee", Optional: true}})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range p.Files {
		paths = append(paths, f.Path)
		if f.Size <= 0 || len(f.SHA256) != 64 {
			t.Errorf("%s: size %d, sha256 %q: not measured", f.Path, f.Size, f.SHA256)
		}
	}
	want := "results.parquet calls.parquet metrics.parquet manifest.json tables/demo_reliability.csv report/report.html report/report.md report/figures/acc.png report/figures/acc.svg README.md"
	if got := strings.Join(paths, " "); got != want {
		t.Fatalf("files:\n got %s\nwant %s", got, want)
	}
	// The card's YAML header declares each table for the viewer, one
	// split of a file the publish sends, results first and the default.
	head, body, ok := strings.Cut(strings.TrimPrefix(p.Card, "---\n"), "\n---\n")
	if !strings.HasPrefix(p.Card, "---\n") || !ok {
		t.Fatalf("the card does not start with a YAML header:\n%s", p.Card)
	}
	var h struct {
		Configs []struct {
			ConfigName string `yaml:"config_name"`
			Default    bool   `yaml:"default"`
			DataFiles  []struct {
				Split string `yaml:"split"`
				Path  string `yaml:"path"`
			} `yaml:"data_files"`
		} `yaml:"configs"`
	}
	if err := yaml.Unmarshal([]byte(head), &h); err != nil {
		t.Fatalf("the card's header is not YAML: %v\n%s", err, head)
	}
	var got []string
	for i, c := range h.Configs {
		if len(c.DataFiles) != 1 || c.DataFiles[0].Split != publish.Split || c.Default != (i == 0) {
			t.Errorf("config %s: %+v", c.ConfigName, c)
			continue
		}
		got = append(got, c.ConfigName+"="+c.DataFiles[0].Path)
	}
	if strings.Join(got, " ") != "results=results.parquet calls=calls.parquet metrics=metrics.parquet" {
		t.Errorf("configs: %v", got)
	}
	for _, s := range []string{"# promoral run `demo`", "| cases | 12 (1 errored, 2 without an answer read) |", "36 (30 made by this run, 6 served from its journal)", "zero_shot, self_correct", "`report/`", `load_dataset("my-org/demo-run", "results", split="train")`} {
		if !strings.Contains(body, s) {
			t.Errorf("the card lacks %q:\n%s", s, body)
		}
	}
}

func TestPlanRefusesWhatIsNotARunAndClashingPaths(t *testing.T) {
	if _, err := publish.New(t.TempDir(), repo, nil); err == nil || !strings.Contains(err.Error(), "no results.parquet") {
		t.Errorf("an empty folder: %v", err)
	}
	dir := runFolder(t)
	extra := filepath.Join(t.TempDir(), "card.md")
	write(t, extra, []byte("mine"))
	for _, tc := range []struct {
		e    publish.Extra
		want string
	}{
		{publish.Extra{Local: extra, Repo: "README.md"}, "would replace the dataset card"},
		{publish.Extra{Local: extra, Repo: "results.parquet"}, "would both be results.parquet"},
		{publish.Extra{Local: extra, Repo: "../up"}, "must be a relative path inside it"},
		{publish.Extra{Local: filepath.Join(dir, "nope"), Repo: "x"}, "cannot add"},
	} {
		if _, err := publish.New(dir, repo, []publish.Extra{tc.e}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.e, err, tc.want)
		}
	}
}

func TestExtrasGoBesideTheRunWithTheirConfigs(t *testing.T) {
	dir := runFolder(t)
	eee := filepath.Join(dir, "eee")
	write(t, filepath.Join(eee, "agg.json"), []byte("{}"))
	write(t, filepath.Join(eee, "samples", "u1_samples.jsonl"), []byte("{}\n"))
	p, err := publish.New(dir, repo, []publish.Extra{{Local: eee, Repo: "eee", About: "Every Eval Ever records", Configs: []publish.Config{{Name: "eee_samples", Path: "eee/samples/*.jsonl"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range p.Files {
		paths = append(paths, f.Path)
	}
	if j := strings.Join(paths, " "); !strings.Contains(j, "eee/agg.json eee/samples/u1_samples.jsonl README.md") {
		t.Errorf("files: %s", j)
	}
	for _, s := range []string{"config_name: eee_samples", "path: eee/samples/*.jsonl", "| `eee/` | Every Eval Ever records |"} {
		if !strings.Contains(p.Card, s) {
			t.Errorf("the card lacks %q", s)
		}
	}
}

func TestPublishCreatesTheRepoAndSendsEveryFile(t *testing.T) {
	s, c, log := fake(t)
	dir := runFolder(t)
	p, res, err := push(t, c, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Commit == "" || len(res.Committed) != len(p.Files) || len(res.Unchanged) != 0 {
		t.Errorf("result: %+v", res)
	}
	if want := []string{"results.parquet", "calls.parquet", "metrics.parquet", "report/figures/acc.png"}; strings.Join(res.Uploaded, " ") != strings.Join(want, " ") {
		t.Errorf("sent to the LFS store: %v, want %v", res.Uploaded, want)
	}
	if res.Bytes != p.Size() {
		t.Errorf("bytes sent %d, want the plan's %d", res.Bytes, p.Size())
	}
	checkRepo(t, s, p)
	s.Do(func(s *hubtest.Server) {
		if len(s.Commits) != 1 || s.Commits[0].Summary != "publish demo" {
			t.Errorf("commits: %+v", s.Commits)
		}
		for _, a := range s.StoreAuth {
			if a != "" {
				t.Errorf("the storage server was sent an Authorization header")
			}
		}
	})
}

func TestSecondPublishOfAnUnchangedRunSendsNothing(t *testing.T) {
	s, c, log := fake(t)
	dir := runFolder(t)
	if _, _, err := push(t, c, dir, log); err != nil {
		t.Fatal(err)
	}
	var puts, commits, received int
	s.Do(func(s *hubtest.Server) {
		for _, n := range s.Puts {
			puts += n
		}
		commits, received = len(s.Commits), s.Received.Len()
	})
	before := s.Count()
	p, res, err := push(t, c, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != "" || len(res.Committed) != 0 || len(res.Unchanged) != len(p.Files) || res.Bytes != 0 {
		t.Errorf("an unchanged run: %+v", res)
	}
	if n := s.Count() - before; n != 1 {
		t.Errorf("an unchanged run took %d requests of the hub, want 1 (paths-info)", n)
	}
	s.Do(func(s *hubtest.Server) {
		n := 0
		for _, k := range s.Puts {
			n += k
		}
		if n != puts || len(s.Commits) != commits {
			t.Errorf("an unchanged run: PUTs %d -> %d, commits %d -> %d", puts, n, commits, len(s.Commits))
		}
		if grew := s.Received.Len() - received; grew > 2000 {
			t.Errorf("an unchanged run sent %d bytes of request bodies, more than a paths-info question", grew)
		}
	})
	// One table changes: only it is sent and committed.
	write(t, filepath.Join(dir, "metrics.parquet"), random(9, 21<<10))
	p, res, err = push(t, c, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Committed, " ") != "metrics.parquet" || strings.Join(res.Uploaded, " ") != "metrics.parquet" {
		t.Errorf("one changed table: committed %v, uploaded %v", res.Committed, res.Uploaded)
	}
	checkRepo(t, s, p)
}

func TestInterruptedUploadResumes(t *testing.T) {
	s, c, log := fake(t)
	dir := runFolder(t)
	// The second large file's upload is cut off halfway.
	s.Do(func(s *hubtest.Server) { s.FailPut = 2 })
	_, _, err := push(t, c, dir, log)
	if err == nil || !strings.Contains(err.Error(), "calls.parquet") || !strings.Contains(err.Error(), "publish again to resume") {
		t.Fatalf("a cut-off upload: %v", err)
	}
	if strings.Contains(err.Error(), "storesig") {
		t.Errorf("the error quotes the storage address's signature: %v", err)
	}
	s.Do(func(s *hubtest.Server) {
		if len(s.Commits) != 0 {
			t.Errorf("a cut-off upload committed: %+v", s.Commits)
		}
	})
	p, res, err := push(t, c, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Present, " ") != "results.parquet" || strings.Join(res.Uploaded, " ") != "calls.parquet metrics.parquet report/figures/acc.png" {
		t.Errorf("the resumed publish: already there %v, sent %v", res.Present, res.Uploaded)
	}
	checkRepo(t, s, p)
	s.Do(func(s *hubtest.Server) {
		for _, f := range p.Files[:2] {
			if want := map[string]int{"results.parquet": 1, "calls.parquet": 2}[f.Path]; s.Puts[f.SHA256] != want {
				t.Errorf("%s was PUT %d times, want %d", f.Path, s.Puts[f.SHA256], want)
			}
		}
		if len(s.Commits) != 1 {
			t.Errorf("commits: %+v", s.Commits)
		}
	})
}

// Ctrl-C during an upload: the error says the publish was interrupted and
// nothing was committed; the next publish does not send again what the
// store received whole.
func TestCtrlCDuringUploadResumes(t *testing.T) {
	s, c, log := fake(t)
	dir := runFolder(t)
	stalled := make(chan struct{})
	s.Do(func(s *hubtest.Server) { s.FailPut, s.Stalled = 3, stalled })
	p, err := publish.New(dir, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stalled; cancel() }()
	_, err = c.Push(ctx, repo, p.Files, hub.PushOptions{Message: "publish demo"})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while trying to send metrics.parquet") || !strings.Contains(err.Error(), "nothing was committed") {
		t.Fatalf("Ctrl-C: %v", err)
	}
	_, res, err := push(t, c, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Present, " ") != "results.parquet calls.parquet" || res.Uploaded[0] != "metrics.parquet" {
		t.Errorf("after Ctrl-C: already there %v, sent %v", res.Present, res.Uploaded)
	}
	checkRepo(t, s, p)
}

func TestMultipartUpload(t *testing.T) {
	s, c, log := fake(t)
	s.Do(func(s *hubtest.Server) { s.MultipartAbove, s.ChunkSize = 100<<10, 64<<10 })
	p, _, err := push(t, c, runFolder(t), log)
	if err != nil {
		t.Fatal(err)
	}
	checkRepo(t, s, p)
	s.Do(func(s *hubtest.Server) {
		if n := s.Puts[p.Files[0].SHA256]; n != 5 {
			t.Errorf("results.parquet (300 KiB) went in %d PUTs, want 5 parts of 64 KiB", n)
		}
	})
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		token  string
		reject *hubtest.Reject
		status int
		want   []string
	}{
		{"no token", "", nil, http.StatusUnauthorized, []string{"needs a hub token with write access", "HF_TOKEN"}},
		{"wrong token", "hf_wrongTokenXXXXXXXXXXXXXXXXXXXXXX", nil, http.StatusUnauthorized, []string{"refused the token from HF_TOKEN", "HTTP 401", "/settings/tokens"}},
		{"read-only token", "hf_readOnlyTokenOfTheFake000000000", nil, http.StatusForbidden, []string{"would not let the token from HF_TOKEN create my-org/demo-run", "HTTP 403", "write access to my-org"}},
		{"rejected commit", token, &hubtest.Reject{Status: http.StatusUnprocessableEntity, Msg: "Your push was rejected: README.md has invalid YAML metadata"}, http.StatusUnprocessableEntity, []string{"cannot commit to my-org/demo-run", "HTTP 422", "invalid YAML metadata", "nothing was committed"}},
		{"conflict", token, &hubtest.Reject{Status: http.StatusConflict, Msg: "A commit has happened since. Please refresh and try again. token " + token}, http.StatusConflict, []string{"HTTP 409", "A commit has happened since", "nothing was committed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c, log := fake(t)
			c.Token = tc.token
			s.Do(func(s *hubtest.Server) { s.RejectCommit = tc.reject })
			_, _, err := push(t, c, runFolder(t), log)
			var pe *hub.PushError
			if !errors.As(err, &pe) || pe.Status != tc.status {
				t.Fatalf("got %v, want a PushError with status %d", err, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q:\n%v", w, err)
				}
			}
			if tc.token != "" && strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error carries the token: %v", err)
			}
			if tc.token == "" && s.Count() != 0 {
				t.Errorf("without a token the hub was asked %d times", s.Count())
			}
			s.Do(func(s *hubtest.Server) {
				if len(s.Commits) != 0 {
					t.Errorf("committed: %+v", s.Commits)
				}
			})
		})
	}
}

func TestTokenIsNeverSentOrSaid(t *testing.T) {
	s, c, log := fake(t)
	dir := runFolder(t)
	var said []string
	s.Do(func(s *hubtest.Server) { s.FailPut = 1 })
	if _, _, err := push(t, c, dir, log); err != nil {
		said = append(said, err.Error())
	}
	s.Do(func(s *hubtest.Server) {
		s.RejectCommit = &hubtest.Reject{Status: http.StatusBadRequest, Msg: "bad request from Authorization: Bearer " + token}
	})
	if _, _, err := push(t, c, dir, log); err != nil {
		said = append(said, err.Error())
	}
	s.Do(func(s *hubtest.Server) { s.RejectCommit = nil })
	p, _, err := push(t, c, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if len(said) != 2 {
		t.Fatalf("want two failed publishes first, got %v", said)
	}
	said = append(said, *log...)
	for _, l := range said {
		if strings.Contains(l, token) {
			t.Errorf("said with the token: %s", l)
		}
	}
	s.Do(func(s *hubtest.Server) {
		if bytes.Contains(s.Received.Bytes(), []byte(token)) {
			t.Errorf("a request body carried the token")
		}
		if len(s.StoreAuth) == 0 {
			t.Errorf("the store saw no PUT")
		}
		for _, a := range s.StoreAuth {
			if strings.Contains(a, token) {
				t.Errorf("the storage server was sent the token")
			}
		}
	})
	for _, f := range p.Files {
		b, _, _ := s.File(repo.ID, f.Path)
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("the published %s carries the token", f.Path)
		}
	}
}

func TestParseRepo(t *testing.T) {
	for in, want := range map[string]string{
		"hf://datasets/org/name":          "dataset org/name main",
		"hf://datasets/org/na.me-2@dev":   "dataset org/na.me-2 dev",
		"hf://org/model":                  "model org/model main",
		"hf://spaces/org/viewer":          "space org/viewer main",
		"hf://datasets/org/name/":         "dataset org/name main",
		"datasets/org/name":               "error",
		"hf://datasets/org":               "error",
		"hf://datasets/org/name/file.csv": "error",
		"hf://datasets/org/../x":          "error",
		"hf://datasets/org/name@":         "error",
	} {
		r, err := hub.ParseRepo(in)
		got := "error"
		if err == nil {
			rev := r.Revision
			if rev == "" {
				rev = "main"
			}
			got = r.Type + " " + r.ID + " " + rev
		}
		if got != want {
			t.Errorf("%s: %s (%v), want %s", in, got, err, want)
		}
	}
}
