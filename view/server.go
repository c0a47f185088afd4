package view

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Server serves one run, or two for comparison, to a browser on loopback.
type Server struct {
	annotator string
	mux       *http.ServeMux
	host      string // host:port the page is served on; other Host headers are refused

	// runs are replaced when their outputs change on disk (reload.go).
	mu        sync.RWMutex
	runs      []*Run
	reloadErr []string // per run: why its changed outputs could not be read
	reloads   int
	reloadMu  sync.Mutex // one reload at a time
	failed    []stamp    // per run: outputs that failed to open (reloadMu)
}

// NewServer serves runs (the first is the one listed; a second can be
// compared with it). annotator is the default name labels are saved under.
func NewServer(runs []*Run, annotator string) *Server {
	s := &Server{runs: runs, annotator: annotator, mux: http.NewServeMux(), reloadErr: make([]string, len(runs)), failed: make([]stamp, len(runs))}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	for _, p := range []string{"GET /{$}", "GET /case/{run}/{i}", "GET /unparsed", "GET /compare", "GET /audit"} {
		s.mux.HandleFunc(p, s.page)
	}
	s.mux.HandleFunc("GET /api/meta", s.meta)
	s.mux.HandleFunc("GET /api/cases", s.cases)
	s.mux.HandleFunc("GET /api/case", s.oneCase)
	s.mux.HandleFunc("GET /api/unparsed", s.unparsed)
	s.mux.HandleFunc("GET /api/compare", s.compare)
	s.mux.HandleFunc("GET /api/pair", s.pair)
	s.mux.HandleFunc("POST /api/label", s.label)
	s.mux.HandleFunc("GET /report.html", s.report)
	s.mux.HandleFunc("GET /figures/{file}", s.figure)
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, req *http.Request) {
		data, _ := assets.ReadFile("assets/icon.svg")
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write(data)
	})
	return s
}

// Listen binds 127.0.0.1:port (0: any free port) and returns the listener
// and the page's address.
func (s *Server) Listen(port int) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, "", err
	}
	s.host = ln.Addr().String()
	return ln, "http://" + s.host + "/", nil
}

// ServeHTTP refuses requests that are not for this page: a Host other
// than the loopback address it listens on (DNS rebinding), and writes from
// another origin (a web page posting labels behind the user's back).
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	setFrameHeaders(w.Header(), pageCSP)
	if s.host != "" {
		_, port, _ := net.SplitHostPort(s.host)
		if req.Host != s.host && req.Host != "localhost:"+port {
			http.Error(w, "this server answers only on "+s.host, http.StatusForbidden)
			return
		}
		if req.Method != http.MethodGet {
			if o := req.Header.Get("Origin"); o != "" && o != "http://"+req.Host {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
		}
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if p := req.URL.Path; strings.HasPrefix(p, "/api/") || p == "/report.html" {
		s.refresh()
		w.Header().Set("X-Promoral-Outputs", s.outputsVersion())
	}
	s.mux.ServeHTTP(w, req)
}

func (s *Server) page(w http.ResponseWriter, req *http.Request) {
	data, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(data)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "promoral view: writing a response: %v\n", err)
	}
}

func fail(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

func (s *Server) run(v url.Values) (*Run, int, error) {
	k := 0
	runs := s.list()
	if r := v.Get("run"); r != "" {
		var err error
		if k, err = strconv.Atoi(r); err != nil || k < 0 || k >= len(runs) {
			return nil, 0, fmt.Errorf("run %q: this view has %d run(s), numbered from 0", r, len(runs))
		}
	}
	return runs[k], k, nil
}

// MetaPage is what /api/meta answers: the runs served and the default
// annotator.
type MetaPage struct {
	Runs      []RunInfo `json:"runs"`
	Annotator string    `json:"annotator"`
}

// RunInfo is what the page header says about a run.
type RunInfo struct {
	Name        string              `json:"name"`
	Dir         string              `json:"dir"`
	Cases       int                 `json:"cases"`
	Manifest    map[string]any      `json:"manifest,omitempty"`
	OpenedMS    float64             `json:"opened_ms"`
	Report      bool                `json:"report"`
	Search      bool                `json:"search_ready"`
	Progress    float64             `json:"search_progress"`
	IndexMS     float64             `json:"index_ms,omitempty"`
	LabelsError string              `json:"labels_error,omitempty"`
	IndexError  string              `json:"index_error,omitempty"`
	Trace       bool                `json:"trace"`
	Values      map[string][]string `json:"values"`  // model, strategy, task: for the compare menus
	Choices     map[string][]string `json:"choices"` // task -> labels a person may set
	Flagged     int                 `json:"flagged"`
	// ReloadError: the run's outputs changed on disk but could not be
	// read again; the view shows the outputs it read before.
	ReloadError string `json:"reload_error,omitempty"`
	OpenedAt    string `json:"opened_at"` // when the outputs shown were read
}

func (s *Server) meta(w http.ResponseWriter, req *http.Request) {
	out := MetaPage{Runs: []RunInfo{}, Annotator: s.annotator}
	s.mu.RLock()
	reloadErr := slices.Clone(s.reloadErr)
	s.mu.RUnlock()
	for k, r := range s.list() {
		ready, p := r.idx.ready()
		info := RunInfo{Name: r.Name, Dir: r.Dir, Cases: r.n, Manifest: r.Manifest, OpenedMS: float64(r.opened.Microseconds()) / 1000,
			Search: ready, Progress: p, Trace: r.hasTrace, Values: map[string][]string{}, Choices: r.labelChoices(),
			ReloadError: reloadErr[k], OpenedAt: r.openedAt.Format(time.RFC3339)}
		if ready {
			info.IndexMS = float64(r.idx.elapsed.Microseconds()) / 1000
			if r.idx.err != nil {
				info.IndexError = r.idx.err.Error()
			}
		}
		if r.labErr != nil {
			info.LabelsError = r.labErr.Error()
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "report.html")); err == nil {
			info.Report = true
		}
		for _, d := range []string{"model", "strategy", "task"} {
			info.Values[d] = append([]string{}, r.dicts[d].vals[1:]...)
		}
		for i := 0; i < r.n; i++ {
			if r.audit[i] == 1 {
				info.Flagged++
			}
		}
		out.Runs = append(out.Runs, info)
	}
	writeJSON(w, out)
}

// labelChoices are, per task, the labels a person may give a case: the
// task's labels as the run shows them (gold, extracted and judged).
func (r *Run) labelChoices() map[string][]string {
	seen := map[uint16]map[string]bool{}
	for i := 0; i < r.n; i++ {
		t := r.task[i]
		if seen[t] == nil {
			seen[t] = map[string]bool{}
		}
		for _, v := range []string{r.val("gold", r.gold[i]), r.val("label", r.label[i]), r.val("verdict", r.verdict[i])} {
			if v != "" && !strings.HasPrefix(v, "(") {
				seen[t][v] = true
			}
		}
	}
	out := map[string][]string{}
	for t, vs := range seen {
		l := []string{}
		for v := range vs {
			l = append(l, v)
		}
		slices.Sort(l)
		out[r.val("task", t)] = l
	}
	return out
}

// find answers the list query of a request; on a bad request it has
// written the error.
func (s *Server) find(w http.ResponseWriter, req *http.Request) (*Run, Query, *Match, bool) {
	v := req.URL.Query()
	r, _, err := s.run(v)
	if err != nil {
		fail(w, 400, err)
		return nil, Query{}, nil, false
	}
	q, err := ParseQuery(v)
	if err != nil {
		fail(w, 400, err)
		return nil, q, nil, false
	}
	m, err := r.Find(q)
	if err != nil {
		fail(w, 400, err)
		return nil, q, nil, false
	}
	return r, q, m, true
}

// CasesPage is a page of the list.
type CasesPage struct {
	Total    int           `json:"total"`
	Offset   int           `json:"offset"`
	Rows     []Row         `json:"rows"`
	Facets   []FacetCounts `json:"facets"`
	Search   string        `json:"search,omitempty"`
	Progress float64       `json:"progress,omitempty"`
	TookMS   float64       `json:"took_ms"`
}

func (s *Server) cases(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	r, q, m, ok := s.find(w, req)
	if !ok {
		return
	}
	page := CasesPage{Total: len(m.Cases), Offset: q.Offset, Facets: m.Facets, Search: m.Search, Progress: m.Progress, Rows: []Row{}}
	for k := q.Offset; k < len(m.Cases) && k < q.Offset+q.Limit; k++ {
		page.Rows = append(page.Rows, r.row(m.Cases[k]))
	}
	page.TookMS = float64(time.Since(start).Microseconds()) / 1000
	writeJSON(w, page)
}

// Nav places a case in the list it was opened from.
type Nav struct {
	Pos   int    `json:"pos"` // 0-based; -1 when the case is not in the list
	Total int    `json:"total"`
	Prev  *int32 `json:"prev,omitempty"`
	Next  *int32 `json:"next,omitempty"`
}

// CasePage is what /api/case answers: a case, and where it sits in the
// list it was opened from.
type CasePage struct {
	*Case
	Nav *Nav `json:"nav,omitempty"`
}

func (s *Server) oneCase(w http.ResponseWriter, req *http.Request) {
	v := req.URL.Query()
	r, _, err := s.run(v)
	if err != nil {
		fail(w, 400, err)
		return
	}
	i := -1
	if id := v.Get("id"); id != "" {
		k, ok := r.byID[id]
		if !ok {
			fail(w, 404, fmt.Errorf("no case %q in run %s", id, r.Name))
			return
		}
		i = int(k)
	} else if i, err = strconv.Atoi(v.Get("i")); err != nil {
		fail(w, 400, fmt.Errorf("i %q: want a case number", v.Get("i")))
		return
	}
	c, err := r.Case(i)
	if err != nil {
		fail(w, 404, err)
		return
	}
	out := CasePage{Case: c}
	if nav := v.Get("nav"); nav != "" {
		nv, err := url.ParseQuery(nav)
		if err == nil {
			if q, err := ParseQuery(nv); err == nil {
				if m, err := r.Find(q); err == nil {
					n := &Nav{Pos: -1, Total: len(m.Cases)}
					if k := slices.Index(m.Cases, int32(i)); k >= 0 {
						n.Pos = k
						if k > 0 {
							n.Prev = &m.Cases[k-1]
						}
						if k+1 < len(m.Cases) {
							n.Next = &m.Cases[k+1]
						}
					}
					out.Nav = n
				}
			}
		}
	}
	writeJSON(w, out)
}

// UnparsedPage is what /api/unparsed answers. The page lists every case
// of a group on demand; rows travel only for the groups' first cases.
type UnparsedPage struct {
	*Unparsed
	Groups []UnparsedGroup `json:"groups"`
}

// UnparsedGroup is a group of unparsed replies with its first cases' rows.
type UnparsedGroup struct {
	MissGroup
	Rows []Row `json:"rows"`
}

func (s *Server) unparsed(w http.ResponseWriter, req *http.Request) {
	r, _, m, ok := s.find(w, req)
	if !ok {
		return
	}
	u, err := r.Unparsed(m.Cases)
	if err != nil {
		fail(w, 500, err)
		return
	}
	out := UnparsedPage{Unparsed: u, Groups: []UnparsedGroup{}}
	for _, g := range u.Groups {
		gg := UnparsedGroup{MissGroup: g, Rows: []Row{}}
		for k, i := range g.Cases {
			if k == 200 {
				break
			}
			gg.Rows = append(gg.Rows, r.row(i))
		}
		out.Groups = append(out.Groups, gg)
	}
	writeJSON(w, out)
}

func (s *Server) compare(w http.ResponseWriter, req *http.Request) {
	v := req.URL.Query()
	ra, _, err := s.run(v)
	if err != nil {
		fail(w, 400, err)
		return
	}
	c := Compare{By: v.Get("by"), A: v.Get("a"), B: v.Get("b"), Only: v.Get("only")}
	if c.Q, err = ParseQuery(v); err != nil {
		fail(w, 400, err)
		return
	}
	rb := ra
	if runs := s.list(); c.By == "run" && len(runs) > 1 {
		ra, rb = runs[0], runs[1]
	}
	out, err := CompareRuns(ra, rb, c)
	if err != nil {
		fail(w, 400, err)
		return
	}
	writeJSON(w, out)
}

// maxLabel bounds a label request: a label and a note, not a document.
const maxLabel = 64 << 10

func (s *Server) label(w http.ResponseWriter, req *http.Request) {
	if ct := req.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		fail(w, 415, errors.New("send the label as application/json"))
		return
	}
	var in struct {
		Run       int    `json:"run"`
		I         int    `json:"i"`
		Label     string `json:"label"`
		Note      string `json:"note"`
		Annotator string `json:"annotator"`
	}
	dec := json.NewDecoder(io.LimitReader(req.Body, maxLabel))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		fail(w, 400, fmt.Errorf("label request: %v", err))
		return
	}
	runs := s.list()
	if in.Run < 0 || in.Run >= len(runs) {
		fail(w, 400, fmt.Errorf("run %d: no such run", in.Run))
		return
	}
	r := runs[in.Run]
	if in.I < 0 || in.I >= r.n {
		fail(w, 400, fmt.Errorf("case %d: no such case", in.I))
		return
	}
	if r.audit[in.I] != 1 {
		fail(w, 400, fmt.Errorf("case %s is not in the audit queue: only cases the judge flagged for audit take a label here", r.id[in.I]))
		return
	}
	who := strings.TrimSpace(in.Annotator)
	if who == "" {
		who = s.annotator
	}
	if who == "" {
		fail(w, 400, errors.New("say who labels: set your name on the page (or start the view with --annotator NAME)"))
		return
	}
	if in.Label != "" {
		choices := r.labelChoices()[r.val("task", r.task[in.I])]
		if !slices.Contains(choices, in.Label) {
			fail(w, 400, fmt.Errorf("label %q is not one of this task's labels (%s)", in.Label, strings.Join(choices, ", ")))
			return
		}
	}
	l, err := r.addLabel(in.I, in.Label, strings.TrimSpace(in.Note), who)
	if err != nil {
		fail(w, 500, err)
		return
	}
	writeJSON(w, map[string]any{"saved": l, "labels": r.labelsOf(in.I), "file": filepath.Join(r.Dir, "labels.jsonl")})
}

// reportLinks turns the report's data-view marks into links to the view's
// filtered lists; report.html itself has no script and opens offline. The
// script and its style are the viewer's own files (the policy allows no
// inline script).
const reportLinks = `<link rel="stylesheet" href="/assets/report-links.css">
<script src="/assets/report-links.js"></script>`

func (s *Server) report(w http.ResponseWriter, req *http.Request) {
	r, _, err := s.run(req.URL.Query())
	if err != nil {
		fail(w, 400, err)
		return
	}
	data, err := os.ReadFile(filepath.Join(r.Dir, "report.html"))
	if err != nil {
		http.Error(w, "this run has no report.html: run `promoral report "+r.Dir+"` first", http.StatusNotFound)
		return
	}
	if k := bytes.LastIndex(data, []byte("</body>")); k >= 0 {
		data = append(data[:k:k], append([]byte(reportLinks), data[k:]...)...)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	setFrameHeaders(w.Header(), reportCSP(data))
	w.Write(data)
}

func (s *Server) figure(w http.ResponseWriter, req *http.Request) {
	name := req.PathValue("file")
	if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		http.NotFound(w, req)
		return
	}
	http.ServeFile(w, req, filepath.Join(s.list()[0].Dir, "figures", name))
}
