package hub

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/dataset"
)

// hubEnv points the environment's hub, token and dataset cache at the test's
// own: the fake hub's loopback address, no token, a fresh cache folder.
func hubEnv(t *testing.T, endpoint string) (cache string) {
	dir := t.TempDir()
	cache = filepath.Join(dir, "cache")
	t.Setenv("HF_ENDPOINT", endpoint)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(dir, "no-token"))
	t.Setenv("PROMORAL_DATA_DIR", cache)
	return cache
}

// Loading a study reaches the hub only through dataset.OpenHub: the hub
// registers itself, and the source it opens reads the run's lock and the
// shared cache, fetches when allowed, and says so in the errors the loader
// tells apart (not cached, hub unreachable).
func TestOpenIsTheRegisteredHubSource(t *testing.T) {
	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	hubEnv(t, h.api.URL)
	run := filepath.Join(t.TempDir(), "run.yaml")

	src, err := dataset.OpenHub(dataset.HubOptions{RunFile: run})
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Files("scruples", ref())
	var nc *NotCachedError
	if !errors.Is(err, dataset.ErrNotCached) || !errors.As(err, &nc) || !strings.Contains(err.Error(), "promoral data pull "+run) {
		t.Fatalf("not cached: %v", err)
	}
	if e := src.Entry("scruples", ref()); e != nil {
		t.Fatalf("an entry before any fetch: %+v", e)
	}

	src, err = dataset.OpenHub(dataset.HubOptions{RunFile: run, Fetch: true})
	if err != nil {
		t.Fatal(err)
	}
	files, err := src.Files("scruples", ref())
	if err != nil || len(files) != 1 {
		t.Fatalf("fetch: %v %v", files, err)
	}
	e := src.Entry("scruples", ref())
	if e == nil || e.Commit != commit || len(e.Files) != 1 || e.Files[0].Size != int64(len(content)) || e.Files[0].SHA256 != sum(content) {
		t.Fatalf("entry %+v", e)
	}
	// Update drops the entry, so the dataset is resolved again.
	src, err = dataset.OpenHub(dataset.HubOptions{RunFile: run, Update: map[string]bool{"scruples": true}})
	if err != nil {
		t.Fatal(err)
	}
	if e := src.Entry("scruples", ref()); e != nil {
		t.Fatalf("an entry for a task being updated: %+v", e)
	}
}

func TestOpenUnreadableLockFails(t *testing.T) {
	hubEnv(t, "http://127.0.0.1:1")
	run := filepath.Join(t.TempDir(), "run.yaml")
	if err := writeAtomic(LockPath(run), []byte("datasets: [not, a, map]\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.OpenHub(dataset.HubOptions{RunFile: run}); err == nil || !strings.Contains(err.Error(), "run.lock.yaml") {
		t.Fatalf("err %v", err)
	}
}

// Only a hub that cannot be reached at all is a *dataset.Unreachable; a
// refusal of the hub is not.
func TestUnreachableOnlyWithoutNetwork(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there any more
	hubEnv(t, down.URL)
	src, err := dataset.OpenHub(dataset.HubOptions{RunFile: filepath.Join(t.TempDir(), "run.yaml"), Fetch: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Files("scruples", ref())
	var un *dataset.Unreachable
	if !errors.As(err, &un) || un.Ref != "owner/set" || un.Endpoint != down.URL || un.Cause == "" {
		t.Fatalf("unreachable hub: %v (%+v)", err, un)
	}
	if !strings.Contains(src.OfflineHint(), "promoral data pull") {
		t.Errorf("offline hint %q", src.OfflineHint())
	}

	h := newFakeHub(t, map[string][]byte{"data/test.jsonl": content})
	r := ref()
	r.Revision = "no-such-branch"
	_, err = h.data(t, filepath.Join(t.TempDir(), "cache"), true, "").Files("scruples", r)
	var he *Error
	if !errors.As(err, &he) || errors.As(err, &un) {
		t.Fatalf("a refusal counts as unreachable: %v", err)
	}
}
