package engine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/promoral/promoral/runfolder"
	"github.com/promoral/promoral/runfolder/manifest"

	"github.com/promoral/promoral/pipeline/parquetio"
)

// The run folder's layout is runfolder's (layout.go there).
const (
	genDir     = runfolder.GenDir
	genCurrent = runfolder.GenCurrent
)

// CurrentGeneration is the folder of the outputs in force, or "" when the
// run folder has none in this layout.
func CurrentGeneration(runDir string) string { return runfolder.CurrentGeneration(runDir) }

// generation is one apply's output folder, written before it is switched in.
type generation struct {
	run, id, dir string
}

func newGeneration(run string, started time.Time) (*generation, error) {
	var b [3]byte
	rand.Read(b[:])
	id := started.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
	g := &generation{run: run, id: id, dir: filepath.Join(run, genDir, id)}
	if err := os.MkdirAll(g.dir, 0o777); err != nil {
		return nil, fmt.Errorf("cannot create the output folder %s: %w", g.dir, err)
	}
	return g, nil
}

// switchIn makes g the run folder's current output set: a link at the top
// for every file it holds (through `current`, so they all switch with it),
// then `current` replaced in one rename, then links whose file the new set
// no longer has removed.
func (g *generation) switchIn() error {
	entries, err := os.ReadDir(g.dir)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		names[e.Name()] = true
		if err := ensureLink(filepath.Join(g.run, e.Name()), filepath.Join(genDir, genCurrent, e.Name())); err != nil {
			return err
		}
	}
	if err := syncDir(g.dir); err != nil {
		return err
	}
	if err := replaceLink(filepath.Join(g.run, genDir, genCurrent), g.id); err != nil {
		return fmt.Errorf("cannot switch in the new outputs: %w", err)
	}
	syncDir(filepath.Join(g.run, genDir))
	// Links into the set that the new one lacks (a metric table that is
	// gone) would dangle: remove them.
	tops, err := os.ReadDir(g.run)
	if err != nil {
		return err
	}
	prefix := filepath.Join(genDir, genCurrent) + string(filepath.Separator)
	for _, e := range tops {
		if e.Type()&fs.ModeSymlink == 0 || names[e.Name()] {
			continue
		}
		p := filepath.Join(g.run, e.Name())
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, prefix) {
			os.Remove(p)
		}
	}
	return nil
}

// ensureLink points path at target, replacing whatever file is there
// (an output of the layout before generations) in one rename.
func ensureLink(path, target string) error {
	if t, err := os.Readlink(path); err == nil && t == target {
		return nil
	}
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a folder; promoral needs the name for an output (move the folder away)", path)
	}
	return replaceLink(path, target)
}

func replaceLink(path, target string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+parquetio.TmpMark+parquetio.RandomSuffix())
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// tidyRunDir removes what killed applies leave behind: temporary files and
// links, and generations that never were switched in or have been replaced.
// It keeps the current generation and, when that one holds errored cases,
// the newest generation without any (so an apply whose cases failed never
// loses the last complete outputs). The caller holds the journal's lock, so
// no other apply is writing here. It returns the kept complete generation
// ("" for none).
func tidyRunDir(run string) string {
	if entries, err := os.ReadDir(run); err == nil {
		for _, e := range entries {
			n := e.Name()
			if strings.HasPrefix(n, ".") && (strings.Contains(n, parquetio.TmpMark) || strings.HasPrefix(n, ".write-test-")) {
				os.Remove(filepath.Join(run, n))
			}
		}
	}
	gens := filepath.Join(run, genDir)
	entries, err := os.ReadDir(gens)
	if err != nil {
		return ""
	}
	current, _ := os.Readlink(filepath.Join(gens, genCurrent))
	keep := map[string]bool{current: true}
	lastComplete := ""
	if cur := filepath.Join(gens, current); current != "" && (manifestErrors(cur) != 0 || manifestPartial(cur)) {
		var ids []string
		for _, e := range entries {
			if e.IsDir() && e.Name() != current {
				ids = append(ids, e.Name())
			}
		}
		sort.Sort(sort.Reverse(sort.StringSlice(ids)))
		for _, id := range ids {
			if g := filepath.Join(gens, id); manifestErrors(g) == 0 && !manifestPartial(g) {
				keep[id], lastComplete = true, filepath.Join(gens, id)
				break
			}
		}
	}
	for _, e := range entries {
		n := e.Name()
		switch {
		case n == genCurrent || keep[n]:
		case e.IsDir():
			os.RemoveAll(filepath.Join(gens, n))
		case strings.Contains(n, parquetio.TmpMark):
			os.Remove(filepath.Join(gens, n))
		}
	}
	return lastComplete
}

// manifestErrors reads the error count of a generation's manifest: the
// errored cases, kept ones included; -1 when it has no readable manifest
// (never switched in, or killed while writing).
func manifestErrors(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return -1
	}
	var m struct {
		Errors int `json:"errors"`
		Kept   int `json:"kept"`
	}
	if json.Unmarshal(data, &m) != nil {
		return -1
	}
	return m.Errors + m.Kept
}

// manifestPartial reports whether a generation's outputs cover part of the
// study (a selected apply): the folder then keeps the last whole outputs.
func manifestPartial(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return false
	}
	var m struct {
		Selection *manifest.Selection `json:"selection"`
	}
	return json.Unmarshal(data, &m) == nil && m.Selection.Partial()
}
