package hub

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/hub/hubtest"
)

// What the hub answers becomes paths in the dataset cache: a commit or a
// listed file named like a path is refused before anything is written, the
// lock records nothing, and no file appears outside the cache.
func TestHubNamesThatClimbOutOfTheCacheAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(s *hubtest.Server)
		ref  *dataset.Hub
		want []string
	}{
		{"commit named like a path", func(s *hubtest.Server) { s.SHA = "../../../../../PWN_A" },
			&dataset.Hub{ID: "evil/ds", Files: []string{"data/test.jsonl"}}, []string{"dataset t:", `commit "../../../../../PWN_A"`, "not a commit"}},
		{"commit named like a path, Parquet conversion", func(s *hubtest.Server) { s.SHA = "../../../../../PWN_B" },
			&dataset.Hub{ID: "evil/ds", Split: "test"}, []string{"dataset t:", `commit "../../../../../PWN_B"`}},
		{"commit with a newline", func(s *hubtest.Server) { s.SHA = "0123\nabc" },
			&dataset.Hub{ID: "evil/ds", Files: []string{"data/test.jsonl"}}, []string{"dataset t:", "not a commit"}},
		{"listed file ..", func(s *hubtest.Server) {
			s.Listed = map[string][]string{"evil/ds": {"{api}/api/datasets/evil/ds/parquet/default/test/.."}}
		}, &dataset.Hub{ID: "evil/ds", Split: "test"}, []string{"dataset t:", `its name ".." is ..`, "not a file name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := hubtest.New(t)
			s.Put("evil/ds", "data/test.jsonl", []byte(`{"id":"a"}`+"\n"))
			s.Put("evil/ds", "default/test/0000.parquet", []byte("PAR1 x PAR1"))
			tc.set(s)
			top := t.TempDir()
			cache := filepath.Join(top, "a", "b", "c", "d", "e", "cache")
			lock, err := ReadLock(filepath.Join(top, "run.lock.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			d := &Data{Client: FromEnv(), Cache: cache, Lock: lock, Fetch: true, RunFile: "run.yaml"}
			_, err = d.Files("t", tc.ref)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err %v lacks %q", err, w)
				}
			}
			filepath.WalkDir(top, func(p string, de fs.DirEntry, err error) error {
				if err == nil && !de.IsDir() && p != lock.Path && !strings.HasPrefix(p, cache+string(filepath.Separator)) {
					t.Errorf("%s was written outside the cache", p)
				}
				return nil
			})
			if _, err := os.Stat(lock.Path); err == nil {
				t.Error("the lock was written")
			}
		})
	}
}

// A lock edited by hand cannot point a load outside the cache either.
func TestLockEntriesStayInsideTheCache(t *testing.T) {
	cache := t.TempDir()
	d := &Data{Cache: cache, Lock: &Lock{Datasets: map[string]*Entry{}}}
	good := &Entry{ID: "owner/set", Commit: hubtest.Commit, Files: []File{{Path: "data/test.jsonl"}}}
	if ps, err := d.Paths(good); err != nil || !strings.HasPrefix(ps[0], cache) {
		t.Fatalf("good entry: %v %v", ps, err)
	}
	for _, e := range []*Entry{
		{ID: "../../x", Commit: hubtest.Commit, Files: []File{{Path: "a.jsonl"}}},
		{ID: "owner/set", Commit: "../..", Files: []File{{Path: "a.jsonl"}}},
		{ID: "owner/set", Commit: hubtest.Commit, Files: []File{{Path: "../../../../x.jsonl"}}},
		{ID: "owner/set", Commit: hubtest.Commit, Files: []File{{Path: "/etc/x.jsonl"}}},
	} {
		if ps, err := d.Paths(e); err == nil {
			t.Errorf("entry %+v gave paths %v", e, ps)
		}
	}
}
