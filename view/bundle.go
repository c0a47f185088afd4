package view

// A bundle is the viewer as a static site (promoral view --bundle): the
// page, the viewer's own Go code compiled to WebAssembly (view/wasm), and
// each run's data. In the browser the Go code answers the page's /api/*
// requests through the same Server, Find, CompareRuns and Unparsed as
// `promoral view`; only what needs the Parquet files is prepared when the
// bundle is made: the compact columns and the finished search index
// (run.gob.gz) and every case page (cases/N.json.gz, a few hundred a file).

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/audit"
)

//go:embed static
var bundleStatic embed.FS

// bundleChunk is how many cases one case file holds.
const bundleChunk = 256

// bundleMarker names the file that marks a folder as a bundle (and so as
// one --bundle may overwrite).
const bundleMarker = "promoral-bundle.json"

// BundleInfo is the bundle's table of contents (promoral-bundle.json).
type BundleInfo struct {
	Format  int             `json:"format"`
	Made    time.Time       `json:"made"`
	Runs    []BundleRunInfo `json:"runs"`
	Chunk   int             `json:"chunk"`
	Bytes   int64           `json:"bytes"` // the whole bundle, this file aside
	Files   int             `json:"files"`
	WasmRaw int64           `json:"wasm_bytes"` // the viewer before compression
	Report  bool            `json:"report"`     // report.html, the first run's, is beside index.html
}

// BundleRunInfo names a run of a bundle.
type BundleRunInfo struct {
	Name  string `json:"name"`
	Cases int    `json:"cases"`
	Data  string `json:"data"` // folder of its data, relative to the bundle
}

// bundleRun is what a bundle keeps of a run: the columns the queries read,
// the finished search index, the unparsed replies' misses and the answer
// policies (which the server reads from the run folder).
type bundleRun struct {
	Name, Dir                                         string
	Manifest                                          []byte
	N                                                 int
	ID, Item                                          []string
	Model, Strategy, Task, Gold, Label, Verdict, Errc []uint16
	Dicts                                             map[string][]string
	Parsed, Correct, Truncated, Blocked, Audit        []int8
	Conf                                              []float64
	Tokens                                            []int32
	Cost                                              []float32
	Subsets                                           []uint64
	SubsetNames                                       []string
	Repeat                                            []int32
	HasTrace, HasCalls                                bool
	Terms                                             []string
	Post                                              [][]byte
	Excerpt                                           []string
	Misses                                            map[int32]missInfo
	Policies                                          map[string]answerPolicy
	Labels                                            map[int32][]audit.Label
	Made                                              time.Time
}

// snapshot waits for the run's search index and reads what the bundle
// keeps of it.
func (r *Run) snapshot() (*bundleRun, error) {
	r.idx.wait()
	if r.idx.err != nil {
		return nil, fmt.Errorf("%s: building the search index: %w", r.Dir, r.idx.err)
	}
	var unparsed []int32
	for i := 0; i < r.n; i++ {
		if r.parsed[i] != 1 && r.errc[i] == 0 {
			unparsed = append(unparsed, int32(i))
		}
	}
	if err := r.loadMisses(unparsed); err != nil {
		return nil, err
	}
	b := &bundleRun{Name: r.Name, Dir: filepath.Base(filepath.Clean(r.Dir)), N: r.n, ID: r.id, Item: r.item,
		Model: r.model, Strategy: r.strategy, Task: r.task, Gold: r.gold, Label: r.label, Verdict: r.verdict, Errc: r.errc,
		Dicts: map[string][]string{}, Parsed: r.parsed, Correct: r.correct, Truncated: r.truncated, Blocked: r.blocked, Audit: r.audit,
		Conf: r.conf, Tokens: r.tokens, Cost: r.cost, Subsets: r.subsets, SubsetNames: r.subsetNames, Repeat: r.repeat,
		HasTrace: r.hasTrace, HasCalls: r.hasCalls, Terms: r.idx.terms, Post: r.idx.post, Excerpt: r.idx.excerpt,
		Misses: map[int32]missInfo{}, Policies: map[string]answerPolicy{}, Made: time.Now().UTC()}
	if r.Manifest != nil {
		var err error
		if b.Manifest, err = json.Marshal(r.Manifest); err != nil {
			return nil, err
		}
	}
	for k, d := range r.dicts {
		b.Dicts[k] = d.vals
	}
	for _, t := range r.dicts["task"].vals[1:] {
		b.Policies[t] = r.policy(t)
	}
	r.mu.RLock()
	for i, m := range r.misses {
		b.Misses[i] = *m
	}
	b.Labels = r.labels
	r.mu.RUnlock()
	return b, nil
}

// restore is the run a bundle kept, its cases read by caseOf.
func (b *bundleRun) restore(caseOf func(i int) (*Case, error)) (*Run, error) {
	r := &Run{Dir: b.Dir, Name: b.Name, n: b.N, id: b.ID, item: b.Item, model: b.Model, strategy: b.Strategy, task: b.Task,
		gold: b.Gold, label: b.Label, verdict: b.Verdict, errc: b.Errc, dicts: map[string]*dict{}, parsed: b.Parsed, correct: b.Correct,
		truncated: b.Truncated, blocked: b.Blocked, audit: b.Audit, conf: b.Conf, tokens: b.Tokens, cost: b.Cost, subsets: b.Subsets,
		subsetNames: b.SubsetNames, repeat: b.Repeat, hasTrace: b.HasTrace, hasCalls: b.HasCalls, byID: make(map[string]int32, b.N),
		openedAt: b.Made, stamp: make(stamp, len(outputFiles)), policies: map[string]answerPolicy{},
		labels: b.Labels, misses: map[int32]*missInfo{}, missRead: make(map[int32]bool, b.N), caseOf: caseOf}
	for _, col := range []any{b.ID, b.Item, b.Model, b.Strategy, b.Task, b.Gold, b.Label, b.Verdict, b.Errc, b.Parsed, b.Correct,
		b.Truncated, b.Blocked, b.Audit, b.Conf, b.Tokens, b.Cost, b.Subsets, b.Excerpt} {
		if n := lenOf(col); n != b.N {
			return nil, fmt.Errorf("run %s: a column holds %d values for %d cases: the bundle is damaged; make it again", b.Name, n, b.N)
		}
	}
	if b.Manifest != nil {
		if err := json.Unmarshal(b.Manifest, &r.Manifest); err != nil {
			return nil, fmt.Errorf("run %s: the manifest: %v", b.Name, err)
		}
	}
	for k, vals := range b.Dicts {
		d := &dict{vals: vals, code: make(map[string]uint16, len(vals))}
		for c, v := range vals {
			d.code[v] = uint16(c)
		}
		r.dicts[k] = d
	}
	for _, k := range []string{"model", "strategy", "task", "gold", "label", "verdict", "error", "subset"} {
		if r.dicts[k] == nil {
			r.dicts[k] = newDict()
		}
	}
	for i, id := range b.ID {
		r.byID[id] = int32(i)
		r.missRead[int32(i)] = true
	}
	for i, m := range b.Misses {
		m := m
		r.misses[i] = &m
	}
	for t, p := range b.Policies {
		r.policies[t] = p
	}
	if r.labels == nil {
		r.labels = map[int32][]audit.Label{}
	}
	x := newTextIndex(r)
	x.terms, x.post, x.excerpt = b.Terms, b.Post, b.Excerpt
	close(x.callsDone)
	close(x.done)
	r.idx = x
	return r, nil
}

func lenOf(col any) int {
	switch c := col.(type) {
	case []string:
		return len(c)
	case []uint16:
		return len(c)
	case []int8:
		return len(c)
	case []float64:
		return len(c)
	case []int32:
		return len(c)
	case []float32:
		return len(c)
	case []uint64:
		return len(c)
	}
	return -1
}

// WriteBundle writes the runs as a static site in dir: wasm is the
// viewer compiled to WebAssembly and wasmExec Go's wasm_exec.js of the
// same release (BuildViewerWasm). dir must be new, empty, or an earlier
// bundle (which is replaced). progress, when not nil, hears of each run.
func WriteBundle(dir string, runs []*Run, wasm, wasmExec []byte, progress io.Writer) (*BundleInfo, error) {
	if err := prepareBundleDir(dir); err != nil {
		return nil, err
	}
	info := &BundleInfo{Format: 1, Made: time.Now().UTC(), Chunk: bundleChunk, WasmRaw: int64(len(wasm))}
	put := func(name string, data []byte) error {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		info.Bytes += int64(len(data))
		info.Files++
		return nil
	}
	// The page: the viewer's own files, addressed relative to the bundle
	// (a project site on GitHub Pages lives below a path).
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		return nil, err
	}
	page = bytes.ReplaceAll(page, []byte(`"/assets/`), []byte(`"assets/`))
	page = bytes.Replace(page, []byte(`<script src="assets/app.js">`),
		[]byte(`<script src="assets/wasm_exec.js"></script>`+"\n"+`<script src="assets/bundle.js"></script>`+"\n"+`<script src="assets/app.js">`), 1)
	if !bytes.Contains(page, []byte("assets/bundle.js")) {
		return nil, errors.New("the viewer's index.html has no app.js script to load the bundle before")
	}
	if err := put("index.html", page); err != nil {
		return nil, err
	}
	err = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "assets/index.html" {
			return err
		}
		data, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		return put(p, data)
	})
	if err != nil {
		return nil, err
	}
	js, err := bundleStatic.ReadFile("static/bundle.js")
	if err != nil {
		return nil, err
	}
	if err := put("assets/bundle.js", js); err != nil {
		return nil, err
	}
	if err := put("assets/wasm_exec.js", wasmExec); err != nil {
		return nil, err
	}
	gz, err := gzipBytes(wasm)
	if err != nil {
		return nil, err
	}
	if err := put("view.wasm.gz", gz); err != nil {
		return nil, err
	}
	if data, err := os.ReadFile(filepath.Join(runs[0].Dir, "report.html")); err == nil {
		if err := put("report.html", data); err != nil {
			return nil, err
		}
		info.Report = true
	}
	for k, r := range runs {
		start := time.Now()
		data := fmt.Sprintf("data/run%d", k)
		snap, err := r.snapshot()
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(snap); err != nil {
			return nil, fmt.Errorf("%s: %v", r.Dir, err)
		}
		if gz, err = gzipBytes(buf.Bytes()); err != nil {
			return nil, err
		}
		if err := put(data+"/run.gob.gz", gz); err != nil {
			return nil, err
		}
		cr := r.newCaseReader()
		for lo := 0; lo < r.n; lo += bundleChunk {
			var chunk []*Case
			for i := lo; i < min(lo+bundleChunk, r.n); i++ {
				c, err := cr.read(i)
				if err != nil {
					cr.close()
					return nil, fmt.Errorf("%s: case %d: %w", r.Dir, i, err)
				}
				chunk = append(chunk, c)
			}
			js, err := json.Marshal(chunk)
			if err != nil {
				cr.close()
				return nil, fmt.Errorf("%s: cases %d to %d: %w", r.Dir, lo, lo+len(chunk)-1, err)
			}
			if gz, err = gzipBytes(js); err != nil {
				cr.close()
				return nil, err
			}
			if err := put(fmt.Sprintf("%s/cases/%d.json.gz", data, lo/bundleChunk), gz); err != nil {
				cr.close()
				return nil, err
			}
		}
		cr.close()
		info.Runs = append(info.Runs, BundleRunInfo{Name: r.Name, Cases: r.n, Data: data})
		if progress != nil {
			fmt.Fprintf(progress, "  %s: %d cases in %s\n", r.Name, r.n, time.Since(start).Round(time.Millisecond))
		}
	}
	toc, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, bundleMarker), toc, 0o644); err != nil {
		return nil, err
	}
	return info, nil
}

// prepareBundleDir makes dir, or empties an earlier bundle there; it
// refuses a folder holding anything else.
func prepareBundleDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	if len(ents) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, bundleMarker)); err != nil {
		return fmt.Errorf("%s is not empty and holds no %s: --bundle writes a new folder (or replaces an earlier bundle); name another one", dir, bundleMarker)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gunzip undoes gzipBytes; data a host already decompressed (one that
// sends .gz files with Content-Encoding: gzip) passes as it is.
func gunzip(data []byte) ([]byte, error) {
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// OpenBundle opens a bundle's runs through get, which reads a file of the
// bundle by its path (in the browser: a fetch relative to the page), and
// serves them read-only.
func OpenBundle(get func(name string) ([]byte, error)) (http.Handler, error) {
	data, err := get(bundleMarker)
	if err != nil {
		return nil, err
	}
	var info BundleInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("%s: %v", bundleMarker, err)
	}
	if info.Format != 1 {
		return nil, fmt.Errorf("%s: bundle format %d; this viewer reads format 1: make the bundle again", bundleMarker, info.Format)
	}
	var runs []*Run
	for _, ri := range info.Runs {
		start := time.Now()
		raw, err := get(ri.Data + "/run.gob.gz")
		if err != nil {
			return nil, err
		}
		if raw, err = gunzip(raw); err != nil {
			return nil, fmt.Errorf("%s/run.gob.gz: %v", ri.Data, err)
		}
		var b bundleRun
		if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&b); err != nil {
			return nil, fmt.Errorf("%s/run.gob.gz: %v (the bundle is damaged: make it again)", ri.Data, err)
		}
		cases := &bundleCases{get: get, dir: ri.Data, chunk: info.Chunk, got: map[int][]json.RawMessage{}}
		r, err := b.restore(cases.read)
		if err != nil {
			return nil, err
		}
		r.opened = time.Since(start)
		runs = append(runs, r)
	}
	return readOnly{NewServer(runs, "")}, nil
}

// bundleCases reads a bundle's case pages a file at a time, keeping the
// files read.
type bundleCases struct {
	get   func(name string) ([]byte, error)
	dir   string
	chunk int
	mu    sync.Mutex
	got   map[int][]json.RawMessage
}

func (b *bundleCases) read(i int) (*Case, error) {
	k := i / max(b.chunk, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	list, ok := b.got[k]
	if !ok {
		name := fmt.Sprintf("%s/cases/%d.json.gz", b.dir, k)
		raw, err := b.get(name)
		if err != nil {
			return nil, err
		}
		if raw, err = gunzip(raw); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("%s: %v (the bundle is damaged: make it again)", name, err)
		}
		b.got[k] = list
	}
	j := i - k*b.chunk
	if j < 0 || j >= len(list) {
		return nil, fmt.Errorf("no case %d in the bundle", i)
	}
	var c Case
	if err := json.Unmarshal(list[j], &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// readOnly serves a bundle: labels cannot be given there.
type readOnly struct{ s *Server }

func (h readOnly) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		fail(w, http.StatusForbidden, errors.New("this is a published bundle of the run, read-only: audit labels are given in `promoral view` on the run folder"))
		return
	}
	h.s.ServeHTTP(w, req)
}

// Answer serves one request to h and returns the answer: how the page's
// requests reach the viewer in the browser, with no network between.
func Answer(h http.Handler, method, target string, body []byte) (status int, contentType string, out []byte) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes()
}

// BuildViewerWasm compiles the viewer to WebAssembly (package view/wasm)
// with the Go toolchain on PATH, from promoral's source: the module this
// binary was built from, else the one holding the working directory. It
// returns the wasm and that toolchain's wasm_exec.js.
func BuildViewerWasm() (wasm, wasmExec []byte, err error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, nil, err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, nil, errors.New("a bundle's viewer is compiled with the Go toolchain, and `go` is not on PATH: install Go (go.dev/dl) and run promoral from its source folder")
	}
	out, err := exec.Command(gobin, "env", "GOROOT").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go env GOROOT: %v", err)
	}
	goroot := strings.TrimSpace(string(out))
	wasmExec, err = os.ReadFile(filepath.Join(goroot, "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		// Go before 1.24 kept it in misc/wasm.
		if wasmExec, err = os.ReadFile(filepath.Join(goroot, "misc", "wasm", "wasm_exec.js")); err != nil {
			return nil, nil, fmt.Errorf("no wasm_exec.js in %s/lib/wasm: %v", goroot, err)
		}
	}
	tmp, err := os.MkdirTemp("", "promoral-wasm")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	target := filepath.Join(tmp, "view.wasm")
	cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags=-s -w", "-o", target, "./view/wasm")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("compiling the viewer to WebAssembly in %s: %v\n%s", root, err, msg)
	}
	wasm, err = os.ReadFile(target)
	return wasm, wasmExec, err
}

// moduleRoot finds promoral's source: this file's folder as it was
// compiled (absent under -trimpath), else the working directory or a
// parent holding promoral's go.mod.
func moduleRoot() (string, error) {
	isRoot := func(dir string) bool {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		return err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module github.com/promoral/promoral\n")) &&
			fileExists(filepath.Join(dir, "view", "wasm", "main.go"))
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if dir := filepath.Dir(filepath.Dir(file)); isRoot(dir) {
			return dir, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isRoot(dir) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", errors.New("a bundle's viewer is compiled from promoral's source, and neither this binary's build folder nor the working directory holds it: run promoral from its source folder")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
