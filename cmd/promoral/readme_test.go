package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/promoral/promoral/internal/needs"
	"github.com/promoral/promoral/pipeline/parquetio"
)

const repoRoot = "../.."

// readmeCommands says what the test does with each command the README and
// the documents under docs/ show in a sh block: "run" runs it from the
// repository's root and wants exit 0; anything else is the reason it is not
// run here. A command added to a document without an entry fails
// TestREADMECommandsAreAccountedFor, and an entry no document shows any
// more fails TestREADMECommandsAreShown.
var readmeCommands = map[string]string{
	"go run ./cmd/promoral apply configs/quickstart.yaml":      "quickstart", // TestREADMEQuickstartAnywhere
	"promoral apply quickstart":                                "quickstart", // TestREADMEQuickstartAnywhere
	"go test ./...":                                            "this is the test suite",
	"go test -short ./...":                                     "this is the test suite",
	"promoral validate configs/paper.yaml":                     "run",
	"promoral data pull configs/paper.yaml":                    "not run: fetches from the hub; data_test.go pulls from a loopback hub",
	"promoral data list":                                       "run",
	"promoral plan configs/paper.yaml":                         "not run: nine CPU-seconds of token counting; the plan tests cover the verb on small studies",
	"promoral apply configs/paper.yaml":                        "not run: calls the providers, which needs keys and the network",
	"promoral apply --offline configs/paper.yaml":              "not run: needs a journal of the paper's calls",
	"promoral diff main:configs/paper.yaml configs/paper.yaml": "not run: needs a git branch named main; diff_test.go covers REV:PATH",
	"promoral diff out/run-a out/run-b":                        "not run: names two example run folders",
	"promoral report out/paper":                                "not run: needs a paper run; TestReportInBrowser reports the quickstart",
	"promoral graph configs/paper.yaml self_correct":           "run",
	"promoral schema strategy":                                 "run",
	"promoral cache":                                           "run",
	"promoral cache prune --older-than 30d":                    "run",
	"promoral cache prune --all":                               "run",
	"promoral cache import out/old-run":                        "not run: names an example run folder; TestCacheImportRunJournal imports a real one",
	"promoral cache prune --from out/old-run":                  "not run: names an example run folder; TestCacheImportRunJournal prunes a real import",
	"promoral apply --batch configs/paper.yaml":                "not run: calls the providers' batch APIs; batch tests (batch_test.go) run apply --batch against local fakes",
	"promoral batches out/paper":                               "not run: needs a paper run; batch_test.go runs the verb on a fake run",
	"promoral publish out/paper hf://datasets/ORG/NAME":        "not run: needs a paper run and the hub; publish_test.go publishes runs to a loopback hub",
	"promoral plan --batch configs/paper.yaml":                 "not run: nine CPU-seconds of token counting; plan tests cover --batch on small studies",
	"promoral batches --cancel out/paper":                      "not run: needs jobs in flight; batch_test.go cancels jobs on the fakes",
	"promoral view out/paper [out/paper-v2]":                   "not run: serves until Ctrl-C; view's tests (view/server_test.go, the browser test) serve a real run",
	"promoral export --format eee out/paper eee/":              "not run: needs a paper run; TestExportEEE exports a run",
	"promoral view out/quickstart":                             "not run: serves until Ctrl-C; view's tests serve a real run",
	"promoral view --bundle site out/paper":                    "not run: needs a paper run; view's TestBundleInBrowser writes and opens a bundle",
	"promoral view --bundle site out/paper out/paper-v2":       "not run: names two example run folders; TestBundleInBrowser bundles two runs",
	"python3 -m http.server -d site":                           "not run: a plain static server, as TestBundleInBrowser's http.FileServer",
	"promoral view out/paper out/paper-v2":                     "not run: names two example run folders",
	"go build -o promoral ./cmd/promoral":                      "not run: go test has built the same package",
	"promoral apply configs/judge_agreement.yaml":              "judges", // TestJudgeAgreementOffline
	"promoral report out/judge_agreement":                      "judges", // TestJudgeAgreementOffline
	"cp -r out/mystudy out/mystudy-before":                     "not run: names an example run folder; TestRejudgeAFinishedRun copies a run folder the same way",
	"promoral apply configs/mystudy.yaml":                      "not run: names an example study; TestRejudgeAFinishedRun applies one with its judge changed",
	"promoral diff out/mystudy-before out/mystudy":             "not run: names example run folders; TestRejudgeAFinishedRun diffs the two",
	"go install ./cmd/promoral":                                "not run: installs into GOPATH/bin; go test has built the same package",
	"PROMORAL_SCALE_CASES=1000000 go test ./cmd/promoral -run '^$' -bench 'Scale$' -benchtime 1x -timeout 60m": "not run: minutes of CPU; BenchmarkScale is the benchmark itself",
}

// userDocs are the documents whose commands the tests account for: the
// README first, then the hand-written pages under docs/ (docs/reference is
// generated from the field specs and shows no commands).
func userDocs(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages under docs/: %v", err)
	}
	return append([]string{"README.md"}, func() []string {
		var rel []string
		for _, p := range pages {
			r, _ := filepath.Rel(repoRoot, p)
			rel = append(rel, filepath.ToSlash(r))
		}
		return rel
	}()...)
}

// docBlocks returns the fenced blocks of one language of a document (a
// path relative to the repository's root).
func docBlocks(t *testing.T, doc, lang string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && line == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

// readmeShell lists the commands of the sh blocks of the README and of
// the pages under docs/, in that order, comments cut.
func readmeShell(t *testing.T) []string {
	var cmds []string
	var blocks []string
	for _, doc := range userDocs(t) {
		blocks = append(blocks, docBlocks(t, doc, "sh")...)
	}
	for _, b := range blocks {
		for _, line := range strings.Split(b, "\n") {
			if i := strings.Index(line, "#"); i >= 0 {
				line = line[:i]
			}
			if line = strings.Join(strings.Fields(line), " "); line != "" {
				cmds = append(cmds, line)
			}
		}
	}
	return cmds
}

func TestREADMECommandsAreAccountedFor(t *testing.T) {
	cmds := readmeShell(t)
	if len(cmds) < 2 || cmds[0] != "go run ./cmd/promoral apply configs/quickstart.yaml" || cmds[1] != "go test ./..." {
		t.Fatalf("the README must open with the quickstart and the test command, has %q", cmds[:min(2, len(cmds))])
	}
	for _, c := range cmds {
		if _, ok := readmeCommands[c]; !ok {
			t.Errorf("command %q (README.md or docs/*.md): add it to readmeCommands (run it, or say why not)", c)
		}
	}
}

// Every entry of readmeCommands is a command some document still shows, so
// the map says what the documents hold, not what they once held.
func TestREADMECommandsAreShown(t *testing.T) {
	shown := map[string]bool{}
	for _, c := range readmeShell(t) {
		shown[c] = true
	}
	for c := range readmeCommands {
		if !shown[c] {
			t.Errorf("readmeCommands has %q, which no sh block of README.md or docs/*.md shows: remove the entry", c)
		}
	}
}

// The cheap README commands run from the repository's root, as written.
func TestREADMECommandsRun(t *testing.T) {
	for _, c := range readmeShell(t) {
		if readmeCommands[c] != "run" {
			continue
		}
		args := strings.Fields(strings.TrimPrefix(c, "promoral "))
		cmd := cli(t, args...)
		cmd.Dir = repoRoot
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			t.Errorf("%s: %v\n%s", c, err, errb.String())
		} else if out.Len() == 0 {
			t.Errorf("%s printed nothing", c)
		}
	}
}

// quickstart is the README's first command, run once for the package's
// tests in a folder that holds the repository's configs, prompts and data
// (linked), so it writes out/quickstart there as the README says.
var quickstart struct {
	once              sync.Once
	dir, stdout, fail string
}

func runQuickstart(t *testing.T) (dir, stdout string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the full quickstart")
	}
	trackInputs(t)
	quickstart.once.Do(func() {
		dir, err := os.MkdirTemp("", "promoral-quickstart-")
		if err != nil {
			quickstart.fail = err.Error()
			return
		}
		quickstart.dir = dir
		for _, f := range []string{"configs", "prompts", "data"} {
			abs, _ := filepath.Abs(filepath.Join(repoRoot, f))
			if err := os.Symlink(abs, filepath.Join(dir, f)); err != nil {
				quickstart.fail = err.Error()
				return
			}
		}
		stdout, stderr, code := runIn(t, dir, "apply", "-q", "configs/quickstart.yaml")
		if code != 0 {
			quickstart.fail = fmt.Sprintf("exit %d: %s", code, stderr)
		}
		quickstart.stdout = stdout
	})
	if quickstart.fail != "" {
		t.Fatalf("the quickstart failed: %s", quickstart.fail)
	}
	return quickstart.dir, quickstart.stdout
}

// trackInputs opens every folder the quickstart reads from. The CLI runs in
// a child process, whose reads go test does not see; a folder opened here
// is recorded with its files' sizes and times, so editing a config, prompt
// or dataset reruns these tests instead of serving a cached pass.
func trackInputs(t *testing.T) {
	t.Helper()
	for _, top := range []string{"configs", "prompts", "data"} {
		filepath.WalkDir(filepath.Join(repoRoot, top), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				if f, err := os.Open(p); err == nil {
					f.Close()
				}
			}
			return nil
		})
	}
}

// runIn runs the CLI in dir, with its own cache folder for the built-in
// studies.
func runIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := cli(t, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// The quickstart as the README tells it: the first command matches the
// published figures; the built-in copy runs in an empty folder, far from the
// repository, and finds every call in the journal (its requests are the
// repository's to the byte).
func TestREADMEQuickstartAnywhere(t *testing.T) {
	dir, stdout := runQuickstart(t)
	if !strings.Contains(stdout, "40 of 40 runs match") || !strings.Contains(stdout, "(502 new, 0 cached)") {
		t.Errorf("first run:\n%s", stdout)
	}
	// What the first command prints reads at an 80-column terminal.
	for _, l := range strings.Split(stdout, "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("the quickstart prints a line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
	away := t.TempDir()
	journal, err := os.ReadFile(filepath.Join(dir, "out", "quickstart", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(away, "out", "quickstart"), 0o755)
	if err := os.WriteFile(filepath.Join(away, "out", "quickstart", "journal.jsonl"), journal, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runIn(t, away, "apply", "-q", "quickstart")
	if code != 0 {
		t.Fatalf("promoral apply quickstart: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(out, "(0 new, 502 cached)") || !strings.Contains(out, "40 of 40 runs match") || !strings.Contains(out, "-> out/quickstart") {
		t.Errorf("built-in quickstart:\n%s", out)
	}
	if !strings.Contains(stderr, "quickstart is built in") {
		t.Errorf("no word of where the built-in files are: %q", stderr)
	}
	for _, f := range []string{"results.parquet", "metrics.parquet", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(away, "out", "quickstart", f)); err != nil {
			t.Errorf("not written in the working directory: %v", err)
		}
	}
}

// metricKey names a figure of metrics.parquet. When metrics.parquet gains
// columns (block, factors), add them here and to the README's queries.
type metricKey struct{ task, model, strategy string }

// The DuckDB queries of docs/outputs.md, run by DuckDB on the quickstart's
// outputs, give the report's numbers: each accuracy and its n equal metrics.parquet's,
// and they cover every accuracy the run reports.
func TestREADMEQueriesReproduceTheMetrics(t *testing.T) {
	var stmts, flat []string
	for _, b := range docBlocks(t, outputsDoc, "sql") {
		for _, s := range strings.Split(b, ";") {
			// The quickstart's queries; others (on out/paper) show columns.
			// Those on the flat columns are checked apart (below).
			switch {
			case !strings.Contains(s, "SELECT") || !strings.Contains(s, "out/quickstart"):
			case strings.Contains(s, "subset_short") || strings.Contains(s, "out_first_label"):
				flat = append(flat, strings.TrimSpace(s))
			default:
				stmts = append(stmts, strings.TrimSpace(s))
			}
		}
	}
	if len(flat) != 2 {
		t.Fatalf("want the two DuckDB queries on the flat columns in %s, found %d", outputsDoc, len(flat))
	}
	if len(stmts) != 3 {
		t.Fatalf("want the three DuckDB queries of %s, found %d", outputsDoc, len(stmts))
	}
	dir, stdout := runQuickstart(t)
	node, ci := needs.DuckDB(t)

	results, data := duckQueries(t, node, ci, dir, stmts)
	if len(results) != 3 {
		t.Fatalf("DuckDB answered %d queries:\n%s", len(results), data)
	}

	// metrics.parquet, read by promoral's own reader.
	rows, err := parquetio.Read(filepath.Join(dir, "out", "quickstart", "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	type figure struct {
		value float64
		n     int64
	}
	want := map[metricKey]figure{}
	for _, r := range rows {
		if r["metric"] != "accuracy" || r["subset"] != "all" {
			continue
		}
		k := metricKey{fmt.Sprint(r["task"]), fmt.Sprint(r["model"]), fmt.Sprint(r["strategy"])}
		v, _ := r["value"].(float64)
		n, _ := r["n"].(int64)
		want[k] = figure{v, n}
	}
	if len(want) != 42 {
		t.Fatalf("metrics.parquet has %d accuracy figures, want 42 (40 re-scored runs and 2 demo strategies)", len(want))
	}
	num := func(v any) float64 {
		switch x := v.(type) {
		case float64:
			return x
		case string: // DuckDB's JSON writes BIGINT as a string
			f, _ := strconv.ParseFloat(x, 64)
			return f
		}
		return math.NaN()
	}
	got := map[metricKey]bool{}
	for qi, q := range results[:2] {
		for _, r := range q {
			k := metricKey{fmt.Sprint(r["task"]), fmt.Sprint(r["model"]), fmt.Sprint(r["strategy"])}
			w, ok := want[k]
			if !ok {
				t.Errorf("query %d: %v has no accuracy in metrics.parquet", qi+1, k)
				continue
			}
			got[k] = true
			if a := num(r["accuracy"]); math.Abs(a-w.value) > 1e-12 || int64(num(r["n"])) != w.n {
				t.Errorf("query %d, %v: DuckDB %.6f over %v, metrics.parquet %.6f over %d", qi+1, k, a, r["n"], w.value, w.n)
			}
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("%v: reported, but no query of %s reproduces it", k, outputsDoc)
		}
	}
	if len(results[2]) != len(want) {
		t.Errorf("the metrics.parquet query of %s gives %d rows, want %d", outputsDoc, len(results[2]), len(want))
	}
	// The flat columns' queries: the demo's accuracy on the short
	// scenarios is metrics.parquet's, and the first answers of
	// self_correct cover its 100 cases.
	fr, fdata := duckQueries(t, node, ci, dir, flat)
	if len(fr) != 2 {
		t.Fatalf("DuckDB answered %d flat-column queries:\n%s", len(fr), fdata)
	}
	short := map[metricKey]figure{}
	for _, r := range rows {
		if r["metric"] == "accuracy" && r["subset"] == "short" && r["task"] == "ethics" {
			v, _ := r["value"].(float64)
			n, _ := r["n"].(int64)
			short[metricKey{"ethics", fmt.Sprint(r["model"]), fmt.Sprint(r["strategy"])}] = figure{v, n}
		}
	}
	seen := 0
	for _, r := range fr[0] {
		if r["short"] != true {
			continue
		}
		k := metricKey{"ethics", fmt.Sprint(r["model"]), fmt.Sprint(r["strategy"])}
		w, ok := short[k]
		if a := num(r["accuracy"]); !ok || math.Abs(a-w.value) > 1e-12 || int64(num(r["n"])) != w.n {
			t.Errorf("flat query, %v short: DuckDB %v over %v, metrics.parquet %+v (%v)", k, r["accuracy"], r["n"], w, ok)
		}
		seen++
	}
	if seen != 2 || len(short) != 2 {
		t.Errorf("flat query: %d short rows, metrics.parquet %d; want the 2 demo strategies\n%s", seen, len(short), fdata)
	}
	total := 0
	for _, r := range fr[1] {
		total += int(num(r["n"]))
	}
	if total != 100 {
		t.Errorf("first vs final answers of self_correct count %d cases, want 100\n%s", total, fdata)
	}

	// The figure the README quotes, both ways.
	if w := want[metricKey{"promoral_replies", "claude-sonnet-4", "first_principles"}]; math.Abs(w.value-0.9081) > 5e-5 || w.n != 185 {
		t.Errorf("claude-sonnet-4/first_principles: %.4f over %d, the README and %s say 0.908 (0.9081) over 185", w.value, w.n, outputsDoc)
	}
	var all, right int
	err = parquetio.Scan(filepath.Join(dir, "out", "quickstart", "results.parquet"), []string{"model", "strategy", "correct"}, nil, func(r map[string]any) {
		if r["model"] == "claude-sonnet-4" && r["strategy"] == "first_principles" {
			all++
			if r["correct"] == true {
				right++
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	plain := fmt.Sprintf("%.3f over %d replies", float64(right)/float64(all), all)
	if !strings.Contains(docText(t, outputsDoc), plain) {
		t.Errorf("the plain average in %s should read %q", outputsDoc, plain)
	}
	for _, s := range []string{"claude-sonnet-4 first_principles   185/193 0.9081", "185 of Claude Sonnet 4's " + strconv.Itoa(all)} {
		if !strings.Contains(readmeText(t), s) {
			t.Errorf("the README's quickstart excerpt should say %q", s)
		}
	}
	// Every line of the excerpt but "...", as the quickstart prints it.
	lines := strings.Split(readmeText(t), "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "runs match the published") })
	if at < 0 {
		t.Fatal("the README shows no excerpt of the quickstart's comparison")
	}
	from, to := at, at
	for from > 0 && lines[from-1] != "```" {
		from--
	}
	for to < len(lines)-1 && lines[to+1] != "```" {
		to++
	}
	if to-from < 3 {
		t.Fatalf("the README's quickstart excerpt is %d lines", to-from+1)
	}
	for _, l := range lines[from : to+1] {
		if strings.TrimSpace(l) != "..." && !strings.Contains(stdout, l+"\n") {
			t.Errorf("the README's quickstart excerpt has %q, which the quickstart does not print:\n%s", l, stdout)
		}
	}
}

// duckQueries runs SQL statements with DuckDB in dir, each one's rows
// decoded.
func duckQueries(t *testing.T, node, ci, dir string, stmts []string) ([][]map[string]any, []byte) {
	t.Helper()
	cmd := exec.Command(node, append([]string{filepath.Join(ci, "duckdb-query.mjs")}, stmts...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, stderr.String())
	}
	var results [][]map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rows []map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rows); err != nil {
			t.Fatal(err)
		}
		results = append(results, rows)
	}
	return results, data
}

// outputsDoc holds the DuckDB queries that reproduce the quickstart's
// figures.
const outputsDoc = "docs/outputs.md"

func readmeText(t *testing.T) string { return docText(t, "README.md") }

// docText is a document's text (a path relative to the repository's root).
func docText(t *testing.T, doc string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
