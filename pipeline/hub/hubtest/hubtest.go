// Package hubtest is a loopback stand-in for the Hugging Face hub, for
// tests: the revision API, the Parquet conversion listing and resolve,
// which redirects (302) to a second server, the file store, with the
// hub's X-Repo-Commit and ETag headers; the store honours Range. Its
// write side (upload.go) creates repositories, answers paths-info and
// preupload, speaks the git LFS batch API with its store on the second
// server, and takes NDJSON commits.
package hubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Commit is the commit every dataset of the fake is at.
const Commit = "89abcdef0123456789abcdef0123456789abcdef"

// Server is the fake hub. Datasets maps a dataset id to its files (repo
// path -> content); Gated ids need Token.
type Server struct {
	API, Store *httptest.Server
	mu         sync.Mutex
	Datasets   map[string]map[string][]byte
	Gated      map[string]bool
	Token      string
	// writeState is the write side (upload.go).
	writeState
	// Requests counts the API's requests.
	Requests int
	// Ranges are the Range headers the store saw, in order ("" for none).
	Ranges []string
	// StallAfter, when positive, makes the store send that many bytes of
	// a whole-file answer, then hang until Release is closed (a pull to
	// kill mid-file).
	StallAfter int
	Release    chan struct{}
	// SHA, when set, is the commit the API answers (in the revision
	// answer and X-Repo-Commit) instead of Commit, and resolve accepts
	// it: a hub that names a path as its commit.
	SHA string
	// Listed, when it has an id, is the Parquet conversion's listing
	// answered for that id, verbatim ("{api}" stands for the API's
	// address): a hub that lists files named like paths.
	Listed map[string][]string
}

func (s *Server) commit() string {
	if s.SHA != "" {
		return s.SHA
	}
	return Commit
}

// New starts a fake hub and sets HF_ENDPOINT to it (and HF_TOKEN empty,
// HF_TOKEN_PATH to nowhere) for the test.
func New(t testing.TB) *Server {
	s := &Server{Datasets: map[string]map[string][]byte{}, Gated: map[string]bool{}, Release: make(chan struct{})}
	s.Store = httptest.NewServer(http.HandlerFunc(s.serveStore))
	s.API = httptest.NewServer(http.HandlerFunc(s.serveAPI))
	t.Cleanup(func() {
		s.mu.Lock()
		select {
		case <-s.Release:
		default:
			close(s.Release)
		}
		s.mu.Unlock()
		s.API.Close()
		s.Store.Close()
	})
	t.Setenv("HF_ENDPOINT", s.API.URL)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", t.TempDir()+"/no-token")
	return s
}

// Count is how many requests the API has had.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Requests
}

// SeenRanges are the Range headers the store has seen.
func (s *Server) SeenRanges() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.Ranges...)
}

// SetStall sets StallAfter.
func (s *Server) SetStall(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.StallAfter = n
}

// Put sets a file of a dataset.
func (s *Server) Put(id, path string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Datasets[id] == nil {
		s.Datasets[id] = map[string][]byte{}
	}
	s.Datasets[id][path] = content
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests++
	if s.serveWrite(w, r) {
		return
	}
	p := r.URL.Path
	var id, rest string
	switch {
	case strings.HasPrefix(p, "/api/datasets/"):
		id, rest = split2(strings.TrimPrefix(p, "/api/datasets/"))
	case strings.HasPrefix(p, "/datasets/"):
		id, rest = split2(strings.TrimPrefix(p, "/datasets/"))
	}
	files, ok := s.Datasets[id]
	if !ok {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository Not Found", http.StatusNotFound)
		return
	}
	if s.Gated[id] && (s.Token == "" || r.Header.Get("Authorization") != "Bearer "+s.Token) {
		w.Header().Set("X-Error-Code", "GatedRepo")
		http.Error(w, "Access to dataset "+id+" is restricted.", http.StatusUnauthorized)
		return
	}
	switch {
	case strings.HasPrefix(p, "/api/") && strings.HasPrefix(rest, "revision/"):
		rev := strings.TrimPrefix(rest, "revision/")
		if rev != "main" && rev != Commit && rev != s.commit() && rev != "refs/convert/parquet" {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, "Invalid rev id: "+rev, http.StatusNotFound)
			return
		}
		var sibs []map[string]any
		for name, b := range files {
			sibs = append(sibs, map[string]any{"rfilename": name, "size": len(b), "lfs": map[string]any{"sha256": sum(b), "size": len(b)}})
		}
		json.NewEncoder(w).Encode(map[string]any{"id": id, "sha": s.commit(), "siblings": sibs})
	case strings.HasPrefix(p, "/api/") && strings.HasPrefix(rest, "parquet/"):
		cs := strings.Split(strings.TrimPrefix(rest, "parquet/"), "/")
		switch len(cs) {
		case 2:
			if listed, ok := s.Listed[id]; ok {
				var urls []string
				for _, u := range listed {
					urls = append(urls, strings.ReplaceAll(u, "{api}", s.API.URL))
				}
				json.NewEncoder(w).Encode(urls)
				return
			}
			var urls []string
			for name := range files {
				if strings.HasPrefix(name, cs[0]+"/"+cs[1]+"/") {
					urls = append(urls, fmt.Sprintf("%s/api/datasets/%s/parquet/%s/%s/%s", s.API.URL, id, cs[0], cs[1], name[strings.LastIndex(name, "/")+1:]))
				}
			}
			if len(urls) == 0 {
				http.Error(w, "Not found", http.StatusNotFound)
				return
			}
			json.NewEncoder(w).Encode(urls)
		case 3:
			s.redirect(w, id, files, cs[0]+"/"+cs[1]+"/"+cs[2])
		default:
			http.NotFound(w, r)
		}
	case strings.HasPrefix(p, "/datasets/") && strings.HasPrefix(rest, "resolve/"):
		rev, file, _ := strings.Cut(strings.TrimPrefix(rest, "resolve/"), "/")
		if f, ok := strings.CutPrefix(rest, "resolve/"+s.commit()+"/"); ok {
			rev, file = s.commit(), f // a commit with slashes in it
		}
		if rev != "main" && rev != Commit && rev != s.commit() {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, "Revision Not Found", http.StatusNotFound)
			return
		}
		s.redirect(w, id, files, file)
	default:
		http.NotFound(w, r)
	}
}

// split2 cuts "owner/name/rest" into "owner/name" and "rest".
func split2(p string) (string, string) {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 3 {
		return strings.Join(parts, "/"), ""
	}
	return parts[0] + "/" + parts[1], parts[2]
}

func (s *Server) redirect(w http.ResponseWriter, id string, files map[string][]byte, file string) {
	b, ok := files[file]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", s.commit())
	w.Header().Set("X-Linked-Etag", `"`+sum(b)+`"`)
	w.Header().Set("ETag", `"`+sum(b)+`"`)
	w.Header().Set("Location", s.Store.URL+"/"+id+"/"+file)
	w.WriteHeader(http.StatusFound)
}

func (s *Server) serveStore(w http.ResponseWriter, r *http.Request) {
	if s.servePut(w, r) {
		return
	}
	s.mu.Lock()
	id, file := split2(strings.TrimPrefix(r.URL.Path, "/"))
	b, ok := s.Datasets[id][file]
	s.Ranges = append(s.Ranges, r.Header.Get("Range"))
	stall, release := s.StallAfter, s.Release
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if stall > 0 && r.Header.Get("Range") == "" {
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:stall])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("ETag", `"`+sum(b)+`"`)
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(b)))
}
