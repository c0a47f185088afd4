package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/spec"
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
// apply leaves them out. The journal is read, never changed.
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
			if err := c.put(rec); err != nil {
				return ci, fmt.Errorf("storing a reply of %s in the shared cache %s: %w", runDir, root, err)
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
		Models []ManifestModel `json:"models"`
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
