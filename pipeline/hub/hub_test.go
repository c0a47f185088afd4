package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/dataset"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

// fakeHub speaks the hub's endpoints on loopback: the revision API, the
// Parquet conversion listing and resolve, which redirects to a second
// server (the file store) as the hub redirects to its CDN.
type fakeHub struct {
	t     *testing.T
	api   *httptest.Server
	store *httptest.Server
	mu    sync.Mutex
	files map[string][]byte // repo path -> content
	gated bool
	token string
	// truncate: how many more store answers break off half way.
	truncate int
	// stall: the store sends half the body, then waits for release.
	stall   chan struct{}
	badEtag bool     // X-Linked-Etag names other bytes than the store serves
	ranges  []string // Range headers the store saw
	storeAu []string // Authorization headers the store saw
}

func newFakeHub(t *testing.T, files map[string][]byte) *fakeHub {
	h := &fakeHub{t: t, files: files}
	h.store = httptest.NewServer(http.HandlerFunc(h.serveStore))
	h.api = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	t.Cleanup(func() { h.api.Close(); h.store.Close() })
	return h
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func (h *fakeHub) authorized(r *http.Request) bool {
	return !h.gated || r.Header.Get("Authorization") == "Bearer "+h.token && h.token != ""
}

func (h *fakeHub) serveAPI(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := r.URL.Path
	if !h.authorized(r) {
		w.Header().Set("X-Error-Code", "GatedRepo")
		http.Error(w, "Access to dataset owner/set is restricted. You must have access to it and be authenticated to access it. Please log in.", http.StatusUnauthorized)
		return
	}
	switch {
	case strings.HasPrefix(p, "/api/datasets/owner/set/revision/"):
		rev := strings.TrimPrefix(p, "/api/datasets/owner/set/revision/")
		if rev != "main" && rev != commit && rev != "refs/convert/parquet" {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, `{"error":"Invalid rev id: `+rev+`"}`, http.StatusNotFound)
			return
		}
		type lfs struct {
			SHA256 string `json:"sha256"`
			Size   int    `json:"size"`
		}
		type sib struct {
			RFilename string `json:"rfilename"`
			Size      int    `json:"size"`
			LFS       *lfs   `json:"lfs,omitempty"`
		}
		var sibs []sib
		for name, b := range h.files {
			sibs = append(sibs, sib{RFilename: name, Size: len(b), LFS: &lfs{SHA256: sum(b), Size: len(b)}})
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "owner/set", "sha": commit, "siblings": sibs})
	case p == "/api/datasets/owner/set/parquet/default/test":
		json.NewEncoder(w).Encode([]string{h.api.URL + "/api/datasets/owner/set/parquet/default/test/0.parquet"})
	case p == "/api/datasets/owner/set/parquet/default/test/0.parquet":
		h.redirect(w, "default/test/0000.parquet")
	case strings.HasPrefix(p, "/datasets/owner/set/resolve/"):
		rest := strings.TrimPrefix(p, "/datasets/owner/set/resolve/")
		rev, file, _ := strings.Cut(rest, "/")
		if rev != commit && rev != "main" {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, "Revision Not Found", http.StatusNotFound)
			return
		}
		h.redirect(w, file)
	default:
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository Not Found", http.StatusNotFound)
	}
}

func (h *fakeHub) redirect(w http.ResponseWriter, file string) {
	b, ok := h.files[file]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if h.badEtag {
		w.Header().Set("X-Linked-Etag", `"`+sum(append(b, '!'))+`"`)
	} else {
		w.Header().Set("X-Linked-Etag", `"`+sum(b)+`"`)
	}
	w.Header().Set("X-Linked-Size", fmt.Sprint(len(b)))
	w.Header().Set("ETag", `"`+sum(b)+`"`)
	w.Header().Set("Location", h.store.URL+"/blobs/"+file)
	w.WriteHeader(http.StatusFound)
}

func (h *fakeHub) serveStore(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	h.storeAu = append(h.storeAu, r.Header.Get("Authorization"))
	b, ok := h.files[strings.TrimPrefix(r.URL.Path, "/blobs/")]
	trunc := h.truncate > 0
	if trunc {
		h.truncate--
	}
	stall := h.stall
	h.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if (trunc || stall != nil) && r.Header.Get("Range") == "" {
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		if stall != nil {
			<-stall
		}
		panic(http.ErrAbortHandler) // the connection drops mid-body
	}
	w.Header().Set("ETag", `"`+sum(b)+`"`)
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(b)))
}

func (h *fakeHub) client(token string) *Client {
	return &Client{Endpoint: h.api.URL, Token: token, TokenFrom: "HF_TOKEN", HTTP: &http.Client{}}
}

func (h *fakeHub) data(t *testing.T, cache string, fetch bool, token string) *Data {
	lock, err := ReadLock(filepath.Join(filepath.Dir(cache), "run.lock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return &Data{Client: h.client(token), Cache: cache, Lock: lock, Fetch: fetch, RunFile: "run.yaml"}
}

// cacheFiles lists every file under the cache, relative to it.
func cacheFiles(t *testing.T, cache string) []string {
	var out []string
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(cache, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func noData(t *testing.T, cache string) {
	t.Helper()
	for _, f := range cacheFiles(t, cache) {
		if !strings.HasSuffix(f, MetaFile) {
			t.Errorf("the cache holds %s after a failed fetch", f)
		}
	}
}

var content = []byte(strings.Repeat(`{"id": "a", "text": "an anecdote"}`+"\n", 500))

func ref() *dataset.Hub { return &dataset.Hub{ID: "owner/set", Files: []string{"data/test.jsonl"}} }

func TestFetchFollowsRedirectPinsAndVerifies(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	d := h.data(t, cache, true, "secret-token")
	files, err := d.Files("scruples", ref())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(files[0])
	if string(got) != string(content) {
		t.Fatalf("cached file differs from the hub's (%d bytes, want %d)", len(got), len(content))
	}
	for _, a := range h.storeAu {
		if a != "" {
			t.Errorf("the token went to the file store on another host: %q", a)
		}
	}
	lock, err := ReadLock(d.Lock.Path)
	if err != nil {
		t.Fatal(err)
	}
	e := lock.Datasets["scruples"]
	if e == nil || e.Commit != commit || len(e.Files) != 1 || e.Files[0].SHA256 != sum(content) || e.Files[0].Size != int64(len(content)) ||
		!strings.Contains(e.Files[0].URL, "/datasets/owner/set/resolve/"+commit+"/data/test.jsonl") {
		t.Fatalf("lock entry %+v", e)
	}
	data, _ := os.ReadFile(d.Lock.Path)
	if strings.Contains(string(data), "secret-token") {
		t.Error("the lock file holds the token")
	}
	// A later load without fetching reads the verified cache.
	d2 := h.data(t, cache, false, "")
	again, err := d2.Files("scruples", ref())
	if err != nil || again[0] != files[0] {
		t.Fatalf("cached load: %v %v", again, err)
	}
	metas, err := List(cache)
	if err != nil || len(metas) != 1 || metas[0].ID != "owner/set" || metas[0].Commit != commit {
		t.Fatalf("List: %+v %v", metas, err)
	}
	// A cached file changed on disk is refused.
	os.WriteFile(files[0], append([]byte("x"), content[1:]...), 0o644)
	if _, err := d2.Files("scruples", ref()); err == nil || !strings.Contains(err.Error(), "does not match the lock") {
		t.Fatalf("corrupt cache: %v", err)
	}
}

func TestNotCachedSaysHowToFetch(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	cache := filepath.Join(t.TempDir(), "cache")
	_, err := h.data(t, cache, false, "").Files("scruples", ref())
	var nc *NotCachedError
	if !errors.As(err, &nc) {
		t.Fatalf("err %v", err)
	}
	for _, want := range []string{"scruples", "owner/set", "promoral data pull run.yaml", cache, "copy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if len(h.ranges) > 0 {
		t.Error("a load without fetch called the hub")
	}
}

func TestGatedRefusalNamesDatasetAndToken(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	h.gated, h.token = true, "the-right-token"
	for _, tc := range []struct{ token, want string }{
		{"", "set HF_TOKEN"},
		{"a-wrong-token", "the token from HF_TOKEN was refused"},
	} {
		cache := filepath.Join(t.TempDir(), "cache")
		_, err := h.data(t, cache, true, tc.token).Files("wildjailbreak", ref())
		var he *Error
		if !errors.As(err, &he) || he.Status != http.StatusUnauthorized {
			t.Fatalf("token %q: %v", tc.token, err)
		}
		for _, want := range []string{"dataset wildjailbreak", "owner/set", "accept its terms", h.api.URL + "/datasets/owner/set", tc.want} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
		if tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Error("the error prints the token")
		}
		noData(t, cache)
	}
	cache := filepath.Join(t.TempDir(), "cache")
	if _, err := h.data(t, cache, true, "the-right-token").Files("wildjailbreak", ref()); err != nil {
		t.Fatalf("with the token: %v", err)
	}
}

func TestUnknownRevisionIs404(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	cache := filepath.Join(t.TempDir(), "cache")
	r := ref()
	r.Revision = "no-such-branch"
	_, err := h.data(t, cache, true, "").Files("scruples", r)
	if err == nil || !strings.Contains(err.Error(), `no revision "no-such-branch"`) || !strings.Contains(err.Error(), "dataset.hub.revision") {
		t.Fatalf("err %v", err)
	}
	noData(t, cache)
	r = ref()
	r.Files = []string{"data/missing.jsonl"}
	if _, err := h.data(t, cache, true, "").Files("scruples", r); err == nil || !strings.Contains(err.Error(), `no file "data/missing.jsonl"`) {
		t.Fatalf("missing file: %v", err)
	}
	noData(t, cache)
}

func TestTruncatedBodyResumesWithRange(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	h.truncate = 1 // the first answer breaks off half way
	cache := filepath.Join(t.TempDir(), "cache")
	files, err := h.data(t, cache, true, "").Files("scruples", ref())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(files[0]); string(got) != string(content) {
		t.Fatal("resumed file differs")
	}
	if len(h.ranges) != 2 || h.ranges[1] != fmt.Sprintf("bytes=%d-", len(content)/2) {
		t.Fatalf("store saw Range headers %q; want a resume from byte %d", h.ranges, len(content)/2)
	}
}

func TestTruncatedEveryTimeKeepsNothing(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	h.truncate = 100
	// Every answer, ranged or not, breaks off: ranged ones too.
	h.stall = nil
	cache := filepath.Join(t.TempDir(), "cache")
	d := h.data(t, cache, true, "")
	// Make ranged answers fail as well by serving a wrong Content-Range.
	h.files["data/test.jsonl"] = content
	orig := h.store.Config.Handler
	h.store.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			w.Header().Set("Content-Length", fmt.Sprint(len(content)))
			w.WriteHeader(http.StatusOK)
			w.Write(content[:10])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		orig.ServeHTTP(w, r)
	})
	_, err := d.Files("scruples", ref())
	if err == nil || !strings.Contains(err.Error(), "broke off 3 times") || !strings.Contains(err.Error(), "dataset scruples") {
		t.Fatalf("err %v", err)
	}
	noData(t, cache)
	if _, err := os.Stat(d.Lock.Path); err == nil {
		t.Error("a failed fetch wrote the lock")
	}
}

func TestKilledPullResumes(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	h.stall = make(chan struct{})
	cache := filepath.Join(t.TempDir(), "cache")
	d := h.data(t, cache, true, "")
	ctx, cancel := context.WithCancel(context.Background())
	d.Ctx = ctx
	d.Progress = progressFunc(func(n int) {
		if n > 0 {
			cancel() // the pull dies once bytes have arrived
		}
	})
	_, err := d.Files("scruples", ref())
	close(h.stall)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted pull: %v", err)
	}
	var part string
	for _, f := range cacheFiles(t, cache) {
		if strings.HasSuffix(f, partSuffix) {
			part = f
		} else {
			t.Errorf("an interrupted pull left %s", f)
		}
	}
	st, err := os.Stat(filepath.Join(cache, part))
	if part == "" || err != nil || st.Size() == 0 || st.Size() >= int64(len(content)) {
		t.Fatalf("interrupted pull left part %q (%v)", part, err)
	}
	h.mu.Lock()
	h.stall = nil
	h.mu.Unlock()
	d2 := h.data(t, cache, true, "")
	files, err := d2.Files("scruples", ref())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(files[0]); string(got) != string(content) {
		t.Fatal("resumed file differs")
	}
	last := h.ranges[len(h.ranges)-1]
	if last != fmt.Sprintf("bytes=%d-", st.Size()) {
		t.Fatalf("the second pull asked for %q, want a resume from byte %d", last, st.Size())
	}
}

type progressFunc func(n int)

func (f progressFunc) Start(string, int64, int64) (func(int), func(error)) {
	return func(n int) { f(n) }, func(error) {}
}

func TestChangedUpstreamIsRefused(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	cache := filepath.Join(t.TempDir(), "cache")
	files, err := h.data(t, cache, true, "").Files("scruples", ref())
	if err != nil {
		t.Fatal(err)
	}
	// The cache is lost and the hub now serves other bytes at the
	// locked commit.
	os.RemoveAll(cache)
	h.files["data/test.jsonl"] = append([]byte(`{"id": "b", "text": "changed"}`+"\n"), content[31:]...)
	_, err = h.data(t, cache, true, "").Files("scruples", ref())
	for _, want := range []string{"dataset scruples", "upstream changed", "promoral data pull --update scruples run.yaml", sum(content)} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v lacks %q", err, want)
		}
	}
	if _, err := os.Stat(files[0]); err == nil {
		t.Error("the changed file is in the cache")
	}
	noData(t, cache)
	// --update takes the new data on purpose and rewrites the lock.
	d := h.data(t, cache, true, "")
	d.Update = map[string]bool{"scruples": true}
	if _, err := d.Files("scruples", ref()); err != nil {
		t.Fatal(err)
	}
	lock, _ := ReadLock(d.Lock.Path)
	if lock.Datasets["scruples"].Files[0].SHA256 != sum(h.files["data/test.jsonl"]) {
		t.Error("--update did not pin the new file")
	}
}

func TestParquetConversion(t *testing.T) {
	pq := []byte("PAR1 not really parquet PAR1")
	h := newFakeHub(t, map[string][]byte{"default/test/0000.parquet": pq})
	cache := filepath.Join(t.TempDir(), "cache")
	r := &dataset.Hub{ID: "owner/set", Split: "test"}
	files, err := h.data(t, cache, true, "").Files("dd", r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(filepath.ToSlash(files[0]), commit+"/default/test/0.parquet") {
		t.Errorf("cached at %s", files[0])
	}
	lock, _ := ReadLock(filepath.Join(filepath.Dir(cache), "run.lock.yaml"))
	if e := lock.Datasets["dd"]; e.Commit != commit || e.Files[0].SHA256 != sum(pq) {
		t.Errorf("lock %+v", e)
	}
	r.Split = "nope"
	if _, err := h.data(t, filepath.Join(t.TempDir(), "c"), true, "").Files("dd", r); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("unknown split: %v", err)
	}
}

// The Parquet conversion's files come without a hash in the listing: the
// hub's X-Linked-Etag is checked instead, and bytes that differ are not
// kept.
func TestLinkedEtagMismatchKeepsNothing(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"default/test/0000.parquet": []byte("PAR1 some bytes PAR1")})
	h.badEtag = true
	cache := filepath.Join(t.TempDir(), "cache")
	_, err := h.data(t, cache, true, "").Files("dd", &dataset.Hub{ID: "owner/set", Split: "test"})
	if err == nil || !strings.Contains(err.Error(), "X-Linked-Etag") || !strings.Contains(err.Error(), "dataset dd") {
		t.Fatalf("err %v", err)
	}
	noData(t, cache)
}

// Two pulls of one dataset at once (two studies, or two shards, sharing
// the cache) never append to one part: the second waits for the first,
// then finds the file it verified, and asks the hub for nothing.
func TestConcurrentPullsShareOneDownload(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	stall := make(chan struct{})
	h.stall = stall
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	pull := func(lockName string) <-chan error {
		lock, err := ReadLock(filepath.Join(dir, lockName))
		if err != nil {
			t.Fatal(err)
		}
		d := &Data{Client: h.client(""), Cache: cache, Lock: lock, Fetch: true, RunFile: "run.yaml"}
		done := make(chan error, 1)
		go func() {
			files, err := d.Files("scruples", ref())
			if err == nil {
				if got, _ := os.ReadFile(files[0]); string(got) != string(content) {
					err = fmt.Errorf("%s: the pulled file differs from the hub's", lockName)
				}
			}
			done <- err
		}()
		return done
	}
	first := pull("a.lock.yaml")
	// The first pull has half the file in its part and waits for the rest.
	for half := false; !half; {
		time.Sleep(10 * time.Millisecond)
		for _, f := range cacheFiles(t, cache) {
			if st, err := os.Stat(filepath.Join(cache, f)); err == nil && strings.HasSuffix(f, partSuffix) && st.Size() == int64(len(content)/2) {
				half = true
			}
		}
	}
	second := pull("b.lock.yaml")
	time.Sleep(300 * time.Millisecond)
	h.mu.Lock()
	asked := len(h.ranges)
	h.stall = nil
	h.mu.Unlock()
	if asked != 1 {
		t.Errorf("the store saw %d requests while the first pull was under way (Range headers %q); want the second pull to wait", asked, h.ranges)
	}
	close(stall) // the first pull's connection drops; it resumes
	for _, done := range []<-chan error{first, second} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"", fmt.Sprintf("bytes=%d-", len(content)/2)}; fmt.Sprint(h.ranges) != fmt.Sprint(want) {
		t.Fatalf("store saw Range headers %q; want %q (one download, resumed once)", h.ranges, want)
	}
	for _, f := range cacheFiles(t, cache) {
		if strings.HasSuffix(f, partSuffix) {
			t.Errorf("a part is left: %s", f)
		}
	}
}

// A change upstream that also changes the file's size reads as a change,
// with the way to take it, not as a cut download.
func TestChangedSizeUpstreamSaysUpdate(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	cache := filepath.Join(t.TempDir(), "cache")
	if _, err := h.data(t, cache, true, "").Files("scruples", ref()); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(cache)
	h.files["data/test.jsonl"] = append([]byte(`{"id": "new", "text": "a row added upstream"}`+"\n"), content...)
	_, err := h.data(t, cache, true, "").Files("scruples", ref())
	for _, want := range []string{"dataset scruples", fmt.Sprint(len(h.files["data/test.jsonl"])), fmt.Sprint(len(content)), "upstream changed", "promoral data pull --update scruples run.yaml"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v lacks %q", err, want)
		}
	}
	noData(t, cache)
}
