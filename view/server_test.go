package view

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/audit"
	"github.com/promoral/promoral/report"
)

// serve starts the view of dir on a free loopback port.
func serve(t *testing.T, dirs ...string) (string, *Server) {
	t.Helper()
	var runs []*Run
	for _, d := range dirs {
		r, err := Open(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		r.idx.wait()
		runs = append(runs, r)
	}
	srv := NewServer(runs, "tester")
	ln, url, err := srv.Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return strings.TrimSuffix(url, "/"), srv
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return res.StatusCode
}

func post(t *testing.T, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

// Labels set through the page land in labels.jsonl, one line each, read
// back by audit.ReadLabels; only audit-queue cases take one, only with
// one of the task's labels, and only from the page's own origin.
func TestLabelsThroughTheServer(t *testing.T) {
	dir := copyRun(t, demoRun(t))
	base, _ := serve(t, dir)
	var page CasesPage
	getJSON(t, base+"/api/cases?audit=flagged&limit=3", &page)
	if len(page.Rows) < 2 {
		t.Fatalf("audit queue: %d rows", len(page.Rows))
	}
	first, second := page.Rows[0], page.Rows[1]
	label := func(i int32, l, who string) (int, string) {
		b, _ := json.Marshal(map[string]any{"run": 0, "i": i, "label": l, "note": "checked", "annotator": who})
		return post(t, base+"/api/label", string(b))
	}
	if code, body := label(first.I, "REFUSAL", "ana"); code != 200 {
		t.Fatalf("label: %d %s", code, body)
	}
	if code, body := label(second.I, "COMPLIANCE", ""); code != 200 { // the server's default annotator
		t.Fatalf("label: %d %s", code, body)
	}
	if code, _ := label(first.I, "COMPLIANCE", "ana"); code != 200 {
		t.Fatal("relabel failed")
	}
	data, err := os.ReadFile(filepath.Join(dir, audit.LabelsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 3 {
		t.Errorf("labels.jsonl has %d lines, want 3 (append-only):\n%s", n, data)
	}
	ls, err := audit.ReadLabels(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range ls {
		got[l.CaseID+" "+l.Annotator] = l.Label
		if l.Note != "checked" || l.Task != "safety" || l.ItemID == "" || l.Time.IsZero() {
			t.Errorf("label fields: %+v", l)
		}
	}
	if got[first.ID+" ana"] != "COMPLIANCE" || got[second.ID+" tester"] != "COMPLIANCE" || len(got) != 2 {
		t.Errorf("labels in force: %v", got)
	}
	var lab CasesPage
	getJSON(t, base+"/api/cases?labelled=labelled", &lab)
	if lab.Total != 2 {
		t.Errorf("labelled filter: %d cases, want 2", lab.Total)
	}

	var notFlagged CasesPage
	getJSON(t, base+"/api/cases?task=ethics&limit=1", &notFlagged)
	for _, c := range []struct {
		i     int32
		label string
		hdr   []string
		want  int
		says  string
	}{
		{notFlagged.Rows[0].I, "acceptable", nil, 400, "not in the audit queue"},
		{first.I, "MAYBE", nil, 400, "not one of this task's labels"},
		{first.I, "REFUSAL", []string{"Origin", "http://evil.example"}, 403, "cross-origin"},
	} {
		b, _ := json.Marshal(map[string]any{"run": 0, "i": c.i, "label": c.label, "annotator": "x"})
		code, body := post(t, base+"/api/label", string(b), c.hdr...)
		if code != c.want || !strings.Contains(body, c.says) {
			t.Errorf("label %q on %d: %d %s; want %d %q", c.label, c.i, code, body, c.want, c.says)
		}
	}
	req, _ := http.NewRequest("GET", base+"/api/meta", nil)
	req.Host = "rebind.example:80"
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 403 {
		t.Errorf("a foreign Host header was served: %v %v", res.StatusCode, err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, audit.LabelsFile))
	if !bytes.Equal(after, data) {
		t.Error("a refused label changed labels.jsonl")
	}
}

// The page is self-contained: every asset is embedded and none names
// another host, so the view works without a network.
func TestAssetsAreLocal(t *testing.T) {
	remote := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := assets.ReadFile(p)
		for _, m := range remote.FindAllString(string(data), -1) {
			if m != "http://www.w3.org" { // the SVG namespace: a name, never fetched
				t.Errorf("%s refers to %s", p, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, demoRun(t))
	for _, path := range []string{"/", "/case/0/3", "/unparsed?model=gpt-4.1", "/compare", "/audit", "/assets/app.js", "/assets/app.css"} {
		res, err := http.Get(base + path)
		if err != nil || res.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", path, res.StatusCode, err)
		}
		res.Body.Close()
	}
}

// The view serves the run's report with links from its tables and
// figures to the matching lists.
func TestReportLinks(t *testing.T) {
	dir := copyRun(t, demoRun(t))
	if _, err := report.Generate(dir, report.Options{}); err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, dir)
	res, err := http.Get(base + "/report.html")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := string(data)
	views := regexp.MustCompile(`data-view="([^"]+)"`).FindAllStringSubmatch(page, -1)
	script, _ := assets.ReadFile("assets/report-links.js")
	linked := strings.Contains(page, `<script src="/assets/report-links.js">`) && strings.Contains(string(script), "samples →")
	if len(views) < 5 || !linked {
		t.Fatalf("%d data-view marks; links script present: %v", len(views), linked)
	}
	// Every link opens a list with cases in it.
	for _, v := range views {
		q := strings.ReplaceAll(v[1], "&amp;", "&")
		var p CasesPage
		if code := getJSON(t, base+"/api/cases?"+q, &p); code != 200 || p.Total == 0 {
			t.Errorf("report link %q: %d, %d cases", q, code, p.Total)
		}
	}
	if !strings.Contains(page, `data-view="model=gpt-4.1&amp;strategy=zero_shot&amp;task=promoral_replies"`) {
		t.Error("the accuracy table's rows are not linked")
	}
}
