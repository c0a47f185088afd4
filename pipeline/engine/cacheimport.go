package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// CacheImport counts what ImportToCache did with one run folder's journal.
type CacheImport struct {
	Run string `json:"run"`
	// Replies is the journal's distinct request keys with a reply;
	// Imported were copied into the cache, Present were there already
	// (left as they are), Local belong to models that call no endpoint
	// (scripted, none), whose replies never go to the shared cache, and
	// Unusable could not serve (Journal.Lookup misses them too).
	Replies  int `json:"replies"`
	Imported int `json:"imported"`
	Present  int `json:"present"`
	Local    int `json:"local"`
	Unusable int `json:"unusable"`
}

// ImportToCache copies the usable replies of a run folder's journal into
// the shared cache at root: each key's reply as the journal serves it, so a
// run that applies the same requests elsewhere finds them. A reply the cache
// already holds is kept (another run may have used it). Replies of the run's
// models that call no endpoint (per its manifest.json) are left out, as
// apply leaves them out. The journal is read, never changed. Each reply
// imported is recorded with the run folder it came from (importsDir), so
// PruneImported can take them out again.
func ImportToCache(root, runDir string) (*CacheImport, error) {
	jpath := filepath.Join(runDir, "journal.jsonl")
	if _, err := os.Stat(jpath); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no journal.jsonl: name a run folder an apply wrote", runDir)
		}
		return nil, err
	}
	local, err := localModels(runDir)
	if err != nil {
		return nil, err
	}
	c, err := OpenSharedCache(root, true)
	if err != nil {
		return nil, err
	}
	j, err := journal.OpenReadOnly(jpath)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	var keys []string
	if err := j.Keys(func(k string) { keys = append(keys, k) }); err != nil {
		return nil, fmt.Errorf("reading %s: %w", jpath, err)
	}
	ci := &CacheImport{Run: runDir}
	record, err := openImportRecord(root, runDir)
	if err != nil {
		return nil, err
	}
	defer record.close()
	for _, k := range keys {
		rec, ok, err := j.Lookup(k)
		if err != nil {
			return ci, err
		}
		ci.Replies++
		switch {
		case !ok:
			ci.Unusable++
		case local[rec.Model]:
			ci.Local++
		default:
			if _, have := c.get(k, false, 0); have {
				ci.Present++
				continue
			}
			sum, err := c.put(rec)
			if err != nil {
				return ci, fmt.Errorf("storing a reply of %s in the shared cache %s: %w", runDir, root, err)
			}
			if err := record.add(k, sum); err != nil {
				return ci, err
			}
			ci.Imported++
		}
	}
	return ci, nil
}

// localModels names the models of a run folder's manifest that call no
// endpoint; none without a manifest.
func localModels(runDir string) (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(runDir, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m struct {
		Models []manifest.Model `json:"models"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(runDir, "manifest.json"), err)
	}
	out := map[string]bool{}
	for _, md := range m.Models {
		if !callsEndpoint(&spec.Model{Name: md.Name, Spec: &spec.ModelSpec{Provider: md.Provider}}) {
			out[md.Name] = true
		}
	}
	return out, nil
}

// importsDir is the folder of import records under the cache's root: one
// file per run folder imported from (named by a hash of its absolute path),
// a first line naming the folder, then a line per reply planted: its key
// and the checksum of the file written.
const importsDir = "imports-v1"

const importHeader = "promoral-import 1 "

type importRecord struct {
	f   *os.File
	buf []byte
}

func importRecordPath(root, runDir string) (string, string, error) {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return "", "", err
	}
	h := sha256.Sum256([]byte(abs))
	return filepath.Join(root, importsDir, hex.EncodeToString(h[:8])), abs, nil
}

func openImportRecord(root, runDir string) (*importRecord, error) {
	p, abs, err := importRecordPath(root, runDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return nil, fmt.Errorf("recording the import in the shared cache %s: %w", root, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("recording the import in the shared cache %s: %w", root, err)
	}
	r := &importRecord{f: f}
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		r.buf = append(r.buf, importHeader+strconv.Quote(abs)+"\n"...)
	}
	return r, nil
}

func (r *importRecord) add(key, sum string) error {
	r.buf = append(r.buf, key+" "+sum+"\n"...)
	if len(r.buf) < 64<<10 {
		return nil
	}
	return r.flush()
}

func (r *importRecord) flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	_, err := r.f.Write(r.buf)
	r.buf = r.buf[:0]
	if err != nil {
		return fmt.Errorf("recording the import: %w", err)
	}
	return nil
}

func (r *importRecord) close() error {
	err := r.flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// PruneImported removes the replies `cache import` planted from runDir:
// each recorded reply whose file still holds what the import wrote (a reply
// stored again since, by a run that paid for it, stays), then the record.
// Run folders' journals are not touched.
func PruneImported(root, runDir string) (removed int, freed int64, err error) {
	p, abs, err := importRecordPath(root, runDir)
	if err != nil {
		return 0, 0, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, fmt.Errorf("no import from %s is recorded in the shared cache %s (cache import records each run folder it copies from, by its absolute path; name the folder as it was when imported)", abs, root)
	}
	if err != nil {
		return 0, 0, err
	}
	c := &SharedCache{root: root}
	lines := strings.Split(string(data), "\n")
	for _, ln := range lines[1:] {
		key, sum, ok := strings.Cut(ln, " ")
		if !ok || !validKey(key) || len(key) != 64 || !lowerHex(key) {
			continue
		}
		fp := c.path(key)
		if fileSum(fp) != sum {
			continue // gone, or stored again since
		}
		info, err := os.Stat(fp)
		if err != nil {
			continue
		}
		if err := os.Remove(fp); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return removed, freed, err
		}
		removed++
		freed += info.Size()
	}
	return removed, freed, os.Remove(p)
}
