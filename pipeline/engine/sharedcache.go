package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/spec"
)

// CacheEnv names the environment variable that moves the shared cache.
const CacheEnv = "PROMORAL_CACHE_DIR"

// SharedCache is the response cache every run shares, by default in the
// user's cache folder: one file per request key, named by the key (the
// journal's: the model's endpoint identity and the request's canonical
// form), holding one journal record of a usable reply under a checksummed
// header. A file is written under a temporary name and renamed into place,
// so a reader sees a whole record or none, and any number of processes
// may read and write the cache at once without a lock: two writers of one
// key write the same reply, and the last rename wins. A file whose header,
// length, checksum or key does not check out (a crash before the data
// reached the disk, a hand edit) is a miss, never served.
//
// The run's journal stays the record of what a run used: a reply found
// here is copied into it before it is used (Engine.fromShared).
type SharedCache struct {
	root  string // the cache folder
	fsync bool

	damaged   atomic.Int64
	oversized atomic.Int64
	writeErrs atomic.Int64
	firstErr  atomic.Pointer[error]
}

// cacheHeader starts every cache file: the format, the body's length and
// its SHA-256, then a newline and the body (one journal line).
const cacheHeader = "promoral-cache 1 "

// repliesDir is the folder of reply files under the cache's root: a
// different format would get its own folder and never read this one's.
const repliesDir = "replies-v1"

// ResolveCacheDir is where a run's shared cache lives: settings.cache_dir
// (relative to the run file's folder) when set, else $PROMORAL_CACHE_DIR,
// else the user's cache folder's promoral folder. "" (and no error) when
// the run keeps its cache to itself (settings.cache: run).
func ResolveCacheDir(st *spec.Study) (string, error) {
	set := st.Run.Settings
	if set.Cache == spec.CacheRun {
		return "", nil
	}
	if set.CacheDir != "" {
		d := set.CacheDir
		if !filepath.IsAbs(d) {
			d = filepath.Join(filepath.Dir(st.File), d)
		}
		return d, nil
	}
	return DefaultCacheDir()
}

// DefaultCacheDir is $PROMORAL_CACHE_DIR, else os.UserCacheDir()/promoral.
// A test binary must name its cache (tests never touch the user's).
func DefaultCacheDir() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return d, nil
	}
	if testing.Testing() {
		return "", fmt.Errorf("%s is not set: tests must keep the shared cache in a temporary folder", CacheEnv)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache folder for the shared response cache (%v): set %s, or settings.cache_dir, or settings.cache: run", err, CacheEnv)
	}
	return filepath.Join(d, "promoral"), nil
}

// OpenSharedCache opens (creating) the shared cache at root.
func OpenSharedCache(root string, fsync bool) (*SharedCache, error) {
	if err := os.MkdirAll(filepath.Join(root, repliesDir), 0o777); err != nil {
		return nil, fmt.Errorf("shared response cache %s: %w (set %s or settings.cache_dir to a writable folder, or settings.cache: run to keep this run's cache in its own folder)", root, err, CacheEnv)
	}
	return &SharedCache{root: root, fsync: fsync}, nil
}

// Root is the cache's folder.
func (c *SharedCache) Root() string { return c.root }

func (c *SharedCache) path(key string) string {
	return filepath.Join(c.root, repliesDir, key[:2], key)
}

func validKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	_, err := hex.DecodeString(key)
	return err == nil
}

// Get returns the cached reply for a key, or false. A file that is not a
// whole, checked record of this key with a usable reply is counted
// (Damaged) and missed; so is a file larger than any reply a journal line
// holds, which is not read. A hit marks the file used now, so pruning by
// age keeps what runs still read.
func (c *SharedCache) Get(key string) (*journal.Record, bool) { return c.get(key, true, 0) }

// cacheFrame is what a cache file holds besides its reply: the header and
// the record's other fields (key, model, case, stage, usage).
const cacheFrame = 64 << 10

// readBound is the largest cache file read for a reply bounded by limit
// bytes on the wire (0: any reply a journal line can hold).
func readBound(limit int64) int64 {
	if limit <= 0 || limit > journal.MaxLine {
		limit = journal.MaxLine
	}
	return limit + cacheFrame
}

// get is Get; touch marks a hit used (plan reads without marking); limit
// is the reply bound of the request looked up (llm.ReplyLimit; 0 for
// none): a file over readBound(limit) is a miss, never read.
func (c *SharedCache) get(key string, touch bool, limit int64) (*journal.Record, bool) {
	if !validKey(key) {
		return nil, false
	}
	p := c.path(key)
	data, err := readBounded(p, readBound(limit))
	if errors.Is(err, errOversize) {
		c.oversized.Add(1)
		return nil, false
	}
	if err != nil {
		return nil, false
	}
	rec, ok := decodeCacheFile(data, key)
	if !ok {
		c.damaged.Add(1)
		return nil, false
	}
	if touch {
		now := time.Now()
		os.Chtimes(p, now, now) // best effort: only pruning reads it
	}
	return rec, true
}

var errOversize = errors.New("over the read bound")

// readBounded reads a file of at most max bytes; a larger one (by its size,
// or by what it gives) is errOversize, with at most max+1 bytes read.
func readBounded(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fs.ErrInvalid
	}
	if fi.Size() > max {
		return nil, errOversize
	}
	data := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > max {
			return nil, errOversize
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // grew since the stat
		}
	}
}

// decodeCacheFile checks a cache file and decodes its record.
func decodeCacheFile(data []byte, key string) (*journal.Record, bool) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || !bytes.HasPrefix(data, []byte(cacheHeader)) {
		return nil, false
	}
	f := strings.Fields(string(data[len(cacheHeader):nl]))
	if len(f) != 2 {
		return nil, false
	}
	n, err := strconv.Atoi(f[0])
	body := data[nl+1:]
	if err != nil || n != len(body) {
		return nil, false
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != f[1] {
		return nil, false
	}
	var rec journal.Record
	if json.Unmarshal(body, &rec) != nil || rec.Key != key || rec.Resp == nil || rec.Err != "" || rec.Sent || rec.Resp.Problem() != "" {
		return nil, false
	}
	return &rec, true
}

// encodeCacheFile is the bytes of rec's cache file.
func encodeCacheFile(rec *journal.Record) ([]byte, error) {
	body, err := journal.AppendRecord(nil, rec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	head := cacheHeader + strconv.Itoa(len(body)) + " " + hex.EncodeToString(sum[:]) + "\n"
	return append([]byte(head), body...), nil
}

// Put stores a usable reply. It never fails the run (the run's journal
// holds the reply); a failure is counted and kept for WriteWarning.
func (c *SharedCache) Put(rec *journal.Record) {
	if _, err := c.put(rec); err != nil {
		c.writeErrs.Add(1)
		c.firstErr.CompareAndSwap(nil, &err)
	}
}

// put stores rec and returns the file's checksum ("" when rec is not a
// usable reply, and nothing is stored).
func (c *SharedCache) put(rec *journal.Record) (string, error) {
	if !validKey(rec.Key) || rec.Resp == nil || rec.Err != "" || rec.Sent || rec.Resp.Problem() != "" {
		return "", nil
	}
	cp := *rec
	cp.ID = "" // the attempt id is the writing journal's, of no use here
	data, err := encodeCacheFile(&cp)
	if err != nil {
		return "", err
	}
	final := c.path(rec.Key)
	dir := filepath.Dir(final)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o777); err == nil {
			tmp, err = os.CreateTemp(dir, ".tmp-*")
		}
	}
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(data)
	if err == nil && c.fsync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return headerSum(data), nil
}

// headerSum is the checksum a cache file's header gives ("" for none).
func headerSum(data []byte) string {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || !bytes.HasPrefix(data, []byte(cacheHeader)) {
		return ""
	}
	f := strings.Fields(string(data[len(cacheHeader):nl]))
	if len(f) != 2 {
		return ""
	}
	return f[1]
}

// fileSum is the checksum in the header of the cache file at p.
func fileSum(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	var head [len(cacheHeader) + 20 + 1 + 64 + 1]byte
	n, _ := io.ReadFull(f, head[:])
	return headerSum(head[:n])
}

// Warnings describes what went wrong with the cache in this process: files
// that were not usable records, replies that could not be stored.
func (c *SharedCache) Warnings() []string {
	var out []string
	if n := c.damaged.Load(); n > 0 {
		out = append(out, fmt.Sprintf("shared cache %s: %d file(s) were not whole records and were treated as misses (the calls were made, or taken from the journal; `promoral cache prune --all` clears the cache)", c.root, n))
	}
	if n := c.oversized.Load(); n > 0 {
		out = append(out, fmt.Sprintf("shared cache %s: %d file(s) larger than the reply bound of their request (limits.max_reply_bytes, else what max_tokens allows, at most %d MiB, plus %d KiB of record) were not read and were treated as misses (the calls were made, or taken from the journal); `promoral cache prune --all` clears the cache", c.root, n, journal.MaxLine>>20, cacheFrame>>10))
	}
	if n := c.writeErrs.Load(); n > 0 {
		out = append(out, fmt.Sprintf("shared cache %s: %d repl(ies) could not be stored (%v); the run's journal holds them, but other runs will not find them", c.root, n, *c.firstErr.Load()))
	}
	return out
}

// CacheStats describes a shared cache's contents.
type CacheStats struct {
	Root    string    `json:"root"`
	Entries int       `json:"entries"`
	Bytes   int64     `json:"bytes"`      // the files' lengths
	Disk    int64     `json:"disk_bytes"` // the blocks they take
	Temp    int       `json:"temp"`       // partial files of writes in progress or killed
	Oldest  time.Time `json:"oldest,omitzero"`
	Newest  time.Time `json:"newest,omitzero"`
}

// CacheInfo walks the cache at root. A missing cache is an empty one.
func CacheInfo(root string) (*CacheStats, error) {
	cs := &CacheStats{Root: root}
	err := walkCache(root, func(p string, info fs.FileInfo, temp bool) error {
		if temp {
			cs.Temp++
			return nil
		}
		cs.Entries++
		cs.Bytes += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			cs.Disk += st.Blocks * 512
		}
		mt := info.ModTime()
		if cs.Oldest.IsZero() || mt.Before(cs.Oldest) {
			cs.Oldest = mt
		}
		if mt.After(cs.Newest) {
			cs.Newest = mt
		}
		return nil
	})
	return cs, err
}

// lowerHex says s is lower-case hex digits, as the cache names its files.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// walkCache calls fn for every file the cache wrote: the reply files
// (replies-v1/ab/<key>, ab the key's first two digits) and the partial
// files of writes in their folders (temp). Any other file or folder is
// not the cache's, and is passed over.
func walkCache(root string, fn func(p string, info fs.FileInfo, temp bool) error) error {
	dir := filepath.Join(root, repliesDir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if p == dir {
			return nil
		}
		parent := filepath.Base(filepath.Dir(p))
		if d.IsDir() {
			if filepath.Dir(p) != dir || len(d.Name()) != 2 || !lowerHex(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Dir(filepath.Dir(p)) != dir || !d.Type().IsRegular() {
			return nil
		}
		name := d.Name()
		temp := strings.HasPrefix(name, ".tmp-")
		if !temp && (len(name) != 64 || !lowerHex(name) || name[:2] != parent) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		return fn(p, info, temp)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// staleTemp is the age after which a partial file is a killed write's.
const staleTemp = time.Hour

// PruneCache removes the replies not used since before (all of them when
// before is zero, with the records of cache import) and partial files left
// by killed writes. Nothing else in the cache's folder is touched. It is safe while
// applies run: a reader holds a whole file or finds none (a miss, and the
// call is made again), and a reply written again after its file was looked
// at is kept.
func PruneCache(root string, before time.Time) (removed int, freed int64, err error) {
	now := time.Now()
	err = walkCache(root, func(p string, info fs.FileInfo, temp bool) error {
		if temp {
			if now.Sub(info.ModTime()) < staleTemp {
				return nil // a write in progress
			}
		} else if !before.IsZero() {
			if !info.ModTime().Before(before) {
				return nil
			}
			// Looked at again: a reply used or stored since the walk
			// read the folder stays.
			if cur, err := os.Stat(p); err != nil || !cur.ModTime().Before(before) {
				return nil
			}
		}
		if err := os.Remove(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !temp {
			removed++
			freed += info.Size()
		}
		return nil
	})
	if err == nil && before.IsZero() {
		err = removeImportRecords(root)
	}
	return removed, freed, err
}

// removeImportRecords removes the records of cache import (cacheimport.go),
// once every reply is gone.
func removeImportRecords(root string) error {
	dir := filepath.Join(root, importsDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if n := e.Name(); e.Type().IsRegular() && len(n) == 16 && lowerHex(n) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
