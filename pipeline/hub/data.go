package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/dataset"
)

// CacheDir is the shared dataset cache: PROMORAL_DATA_DIR, else
// promoral/datasets in the user's cache folder (XDG_CACHE_HOME or
// ~/.cache on Linux, ~/Library/Caches on macOS, %LocalAppData% on
// Windows).
func CacheDir() string {
	if d := os.Getenv("PROMORAL_DATA_DIR"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "promoral", "datasets")
}

func init() { dataset.RegisterHub(Open) }

// Open is the dataset.HubSource of a run file: the shared cache
// (CacheDir), the run's lock file and the hub named by the environment
// (FromEnv). It fails when the lock file cannot be read.
func Open(o dataset.HubOptions) (dataset.HubSource, error) {
	lock, err := ReadLock(LockPath(o.RunFile))
	if err != nil {
		return nil, err
	}
	return source{&Data{Client: FromEnv(), Cache: CacheDir(), Lock: lock, Fetch: o.Fetch, Update: o.Update,
		Progress: o.Progress, Ctx: o.Ctx, RunFile: o.RunFile}}, nil
}

// source is a Data seen as a dataset.HubSource.
type source struct{ d *Data }

func (s source) Files(task string, ref *dataset.Hub) ([]string, error) { return s.d.Files(task, ref) }
func (s source) OfflineHint() string                                   { return s.d.OfflineHint() }

func (s source) Entry(task string, ref *dataset.Hub) *dataset.LockEntry {
	e := s.d.Entry(task, ref)
	if e == nil {
		return nil
	}
	out := &dataset.LockEntry{Commit: e.Commit, Files: make([]dataset.LockedFile, len(e.Files))}
	for i, f := range e.Files {
		out.Files[i] = dataset.LockedFile{Size: f.Size, SHA256: f.SHA256}
	}
	return out
}

// Data finds the files of datasets named by hub reference: in the cache,
// verified against the lock, or (with Fetch) from the hub.
type Data struct {
	Client *Client
	Cache  string
	Lock   *Lock
	// Fetch allows downloads; without it a dataset not in the cache is a
	// *NotCachedError.
	Fetch bool
	// Update names the datasets to resolve again, replacing their lock
	// entries (data pull --update).
	Update   map[string]bool
	Progress dataset.Progress
	Ctx      context.Context
	// RunFile is named in the messages' commands.
	RunFile string
}

// NotCachedError says a dataset is not in the cache and how to get it.
type NotCachedError struct {
	Name, ID, Cache, RunFile string
}

func (e *NotCachedError) Error() string {
	return fmt.Sprintf("dataset %s (%s) is not in the cache (%s): run `promoral data pull %s` (on a machine without network: run it on one with network, copy %s to the same place here, or point PROMORAL_DATA_DIR at the copy, and copy the lock file %s beside the run file)",
		e.Name, e.ID, e.Cache, e.RunFile, e.Cache, filepath.Base(LockPath(e.RunFile)))
}

// Is makes the error dataset.ErrNotCached.
func (e *NotCachedError) Is(target error) bool { return target == dataset.ErrNotCached }

// Dir is where a locked dataset's files live in the cache.
func (d *Data) Dir(e *Entry) string {
	return filepath.Join(d.Cache, filepath.FromSlash(e.ID), e.Commit)
}

// Paths are the cache paths of a locked dataset's files. Every name in the
// entry (from the lock file, or from the hub's answer) is checked before it
// becomes a path, and every path must lie inside the cache.
func (d *Data) Paths(e *Entry) ([]string, error) {
	bad := func(what string, v string, why string) error {
		return fmt.Errorf("dataset %s: %s %.80q %s, so it cannot name a place in the dataset cache %s; nothing was read or fetched (fix or delete the lock file %s and run `promoral data pull %s`)",
			e.ID, what, v, why, d.Cache, d.Lock.Path, d.RunFile)
	}
	if !dataset.ValidHubID(e.ID) {
		return nil, bad("the id", e.ID, "is not owner/name")
	}
	if !ValidCommit(e.Commit) {
		return nil, bad("the commit", e.Commit, "is not 40 hex digits")
	}
	root := filepath.Clean(d.Cache)
	dir := d.Dir(e)
	out := make([]string, len(e.Files))
	for i, f := range e.Files {
		if f.Path == "" || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == ".." || strings.HasPrefix(f.Path, "../") || strings.ContainsAny(f.Path, "\\\x00\n\r") {
			return nil, bad("the file", f.Path, "is not a path inside the repository")
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if rel, err := filepath.Rel(root, p); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return nil, bad("the file", f.Path, "lies outside the cache")
		}
		out[i] = p
	}
	return out, nil
}

// Entry is the lock's entry for the dataset when it was made for ref.
func (d *Data) Entry(name string, ref *dataset.Hub) *Entry {
	if e := d.Lock.Datasets[name]; e != nil && e.matches(ref) && !d.Update[name] {
		return e
	}
	return nil
}

// Files returns the verified local files of the dataset the task name
// reads by ref, fetching them when allowed and needed.
func (d *Data) Files(name string, ref *dataset.Hub) ([]string, error) {
	return d.files(name, ref)
}

// OfflineHint says how to bring the run file's datasets to a machine
// without network (after an Error with Net).
func (d *Data) OfflineHint() string {
	return fmt.Sprintf("Without network here: run `promoral data pull %s` on a machine with network, then copy its dataset cache (%s there) to %s here, or point PROMORAL_DATA_DIR at the copy, and copy the lock file %s beside the run file. A mirror of the hub can be set with HF_ENDPOINT.",
		d.RunFile, "PROMORAL_DATA_DIR or the user cache folder's promoral/datasets", d.Cache, filepath.Base(LockPath(d.RunFile)))
}

func (d *Data) files(name string, ref *dataset.Hub) ([]string, error) {
	ctx := d.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	e := d.Entry(name, ref)
	if e != nil {
		paths, err := d.Paths(e)
		if err != nil {
			return nil, err
		}
		missing := false
		for i, p := range paths {
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				missing = true
				continue
			}
			sum, size, err := hashFile(p)
			if err != nil {
				return nil, err
			}
			if sum != e.Files[i].SHA256 || size != e.Files[i].Size {
				return nil, &Error{Dataset: name, Msg: fmt.Sprintf("the cached file %s does not match the lock %s (sha256 %s, %d bytes; the lock pins %s, %d bytes): delete it and run `promoral data pull %s`",
					p, d.Lock.Path, sum, size, e.Files[i].SHA256, e.Files[i].Size, d.RunFile)}
			}
		}
		if !missing {
			return paths, nil
		}
		if !d.Fetch {
			return nil, &NotCachedError{Name: name, ID: ref.ID, Cache: d.Cache, RunFile: d.RunFile}
		}
		// Fetch what is missing, exactly as locked.
		for i, p := range paths {
			if _, err := os.Stat(p); err == nil {
				continue
			}
			if _, err := d.Client.Download(ctx, name, ref, e.Files[i], p, d.Progress); err != nil {
				var he *Error
				if errors.As(err, &he) && he.Changed {
					he.Msg += fmt.Sprintf("; the hub now serves different data than the lock %s pins (upstream changed). To take the new data on purpose: promoral data pull --update %s %s", d.Lock.Path, name, d.RunFile)
				}
				return nil, err
			}
		}
		return paths, d.writeMeta(e, ref)
	}
	if !d.Fetch {
		return nil, &NotCachedError{Name: name, ID: ref.ID, Cache: d.Cache, RunFile: d.RunFile}
	}
	r, err := d.Client.Resolve(ctx, name, ref)
	if err != nil {
		return nil, err
	}
	e = entryFor(ref, r)
	paths, err := d.Paths(e)
	if err != nil {
		return nil, err
	}
	for i := range e.Files {
		got, err := d.Client.Download(ctx, name, ref, e.Files[i], paths[i], d.Progress)
		if err != nil {
			var he *Error
			if errors.As(err, &he) && he.Changed {
				he.Msg += " (the hub's own listing of the file said otherwise); pull again"
			}
			return nil, err
		}
		e.Files[i].Size, e.Files[i].SHA256 = got.Size, got.SHA256
	}
	d.Lock.Datasets[name] = e
	if err := d.Lock.Save(); err != nil {
		return nil, fmt.Errorf("dataset %s: fetched, but the lock file cannot be written: %v", name, err)
	}
	return paths, d.writeMeta(e, ref)
}

// Meta describes a cached dataset for `promoral data list`.
type Meta struct {
	ID      string `yaml:"id"`
	Config  string `yaml:"config,omitempty"`
	Split   string `yaml:"split,omitempty"`
	Commit  string `yaml:"commit"`
	Licence string `yaml:"licence,omitempty"`
	Gated   bool   `yaml:"gated,omitempty"`
	Files   []File `yaml:"files"`
	// Dir is the folder the meta file was found in.
	Dir string `yaml:"-"`
}

// MetaFile is the name of the file describing a cached dataset.
const MetaFile = "promoral-dataset.yaml"

func (d *Data) writeMeta(e *Entry, ref *dataset.Hub) error {
	m := Meta{ID: e.ID, Config: e.Config, Split: e.Split, Commit: e.Commit, Licence: ref.Licence, Gated: ref.Gated, Files: e.Files}
	data, err := yaml.Marshal(&m)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(d.Dir(e), MetaFile), data)
}

// writeAtomic replaces path with data through a temporary file of its own
// beside it (two pulls may write one file at once), renamed in.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// List reads the cached datasets under a cache folder.
func List(cache string) ([]Meta, error) {
	var out []Meta
	err := filepath.WalkDir(cache, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == cache {
				return filepath.SkipAll
			}
			return err
		}
		if de.IsDir() || de.Name() != MetaFile {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var m Meta
		if err := yaml.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		m.Dir = filepath.Dir(p)
		out = append(out, m)
		return nil
	})
	return out, err
}
