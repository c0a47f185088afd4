package view

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// outputFiles are the files of a run folder whose change means the run was
// applied again (re-scored): `apply` switches in a new set of outputs, so
// each top-level name then leads to another file.
var outputFiles = []string{"results.parquet", "calls.parquet", "manifest.json"}

// stamp identifies the output files a Run was read from.
type stamp []os.FileInfo

func stampOf(dir string) stamp {
	s := make(stamp, len(outputFiles))
	for k, name := range outputFiles {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			s[k] = fi
		}
	}
	return s
}

// same says whether the two stamps name the same files, unchanged.
func (s stamp) same(o stamp) bool {
	if len(s) != len(o) {
		return false
	}
	for k := range s {
		a, b := s[k], o[k]
		switch {
		case a == nil && b == nil:
		case a == nil || b == nil:
			return false
		case !os.SameFile(a, b) || !a.ModTime().Equal(b.ModTime()) || a.Size() != b.Size():
			return false
		}
	}
	return true
}

// refresh reopens every run whose outputs changed since it was read (a
// re-scored run), so the next answer shows the new results without a
// restart. A run that cannot be read again (its outputs half written by
// hand, say) keeps being served as it was, and the failure is reported by
// /api/meta until a later request reads it.
func (s *Server) refresh() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	runs := s.list()
	for k, r := range runs {
		now := stampOf(r.Dir)
		if now.same(r.stamp) || now.same(s.failed[k]) {
			continue
		}
		nr, err := Open(r.Dir)
		if err != nil {
			msg := fmt.Sprintf("%s changed on disk but cannot be read again, so the view still shows the outputs it read at %s: %v",
				r.Dir, r.openedAt.Format(time.TimeOnly), err)
			s.mu.Lock()
			if s.reloadErr[k] != msg {
				fmt.Fprintf(os.Stderr, "promoral view: %s\n", msg)
			}
			s.reloadErr[k] = msg
			s.mu.Unlock()
			s.failed[k] = now // tried again once the files change again
			continue
		}
		fmt.Fprintf(os.Stderr, "promoral view: %s changed on disk: reloaded (%d cases)\n", r.Dir, nr.Len())
		s.mu.Lock()
		s.runs[k] = nr
		s.reloadErr[k] = ""
		s.failed[k] = nil
		s.reloads++
		s.mu.Unlock()
		r.Close()
	}
}

// list is the runs being served now.
func (s *Server) list() []*Run {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]*Run(nil), s.runs...)
}

// outputsVersion counts the reloads: the page sees it change and reads the
// run's description again.
func (s *Server) outputsVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return strconv.Itoa(s.reloads)
}

// Close stops the background work of the runs being served.
func (s *Server) Close() {
	for _, r := range s.list() {
		r.Close()
	}
}
