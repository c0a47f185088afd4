package hubtest

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The write side of the fake: repository creation, paths-info, preupload,
// the git LFS batch API (basic and multipart transfers, verify) with a
// store on the second server, and the NDJSON commit API. Writes need
// Token; ReadToken is a valid token without write access (403).

// Pushed is a commit the fake accepted.
type Pushed struct {
	Repo, ID, Summary string
	// Files are the paths it added or replaced.
	Files []string
}

// Reject makes the commit API refuse every commit with Status and an
// error body carrying Msg.
type Reject struct {
	Status int
	Msg    string
}

// writeState is the fake's write side; its fields are guarded by
// Server.mu.
type writeState struct {
	// ReadToken is a valid token that may not write.
	ReadToken string
	// Commits are the accepted commits, in order.
	Commits []Pushed
	// RejectCommit, when set, refuses commits.
	RejectCommit *Reject
	// FailPut = n makes the n-th next whole-object PUT to the store take
	// half the body, then drop the connection (an upload cut off).
	FailPut int
	// Stalled, when set, makes that PUT hang instead, after a send on
	// Stalled, until the client gives up (Ctrl-C) or the test ends.
	Stalled chan struct{}
	// MultipartAbove, when positive, makes the batch API answer objects
	// larger than it with multipart uploads of ChunkSize parts.
	MultipartAbove, ChunkSize int64
	// Puts counts the PUTs to the store per object id (parts included),
	// finished or not.
	Puts map[string]int
	// Received is every request body the fake received, for tests that
	// look for what must never be sent.
	Received bytes.Buffer
	// StoreAuth are the Authorization headers the store saw.
	StoreAuth []string

	lfs      map[string][]byte          // oid -> content
	lfsPaths map[string]map[string]bool // repo -> paths kept as LFS pointers
	parts    map[string]map[int][]byte  // oid -> part -> bytes
	heads    map[string]string          // repo -> commit id
}

func (s *Server) initWrite() {
	if s.lfs == nil {
		s.lfs = map[string][]byte{}
		s.lfsPaths = map[string]map[string]bool{}
		s.parts = map[string]map[int][]byte{}
		s.heads = map[string]string{}
		s.Puts = map[string]int{}
	}
}

// Do runs f with the fake's lock held, to set or read its write side.
func (s *Server) Do(f func(*Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initWrite()
	f(s)
}

// File is a file of a repository of the fake, with whether it is kept
// in the LFS store.
func (s *Server) File(id, p string) (content []byte, lfs, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initWrite()
	content, ok = s.Datasets[id][p]
	return content, s.lfsPaths[id][p], ok
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// authWrite refuses a request that may not write; it reports whether it
// answered.
func (s *Server) authWrite(w http.ResponseWriter, r *http.Request, what string) bool {
	got := r.Header.Get("Authorization")
	switch {
	case s.Token != "" && got == "Bearer "+s.Token:
		return false
	case s.ReadToken != "" && got == "Bearer "+s.ReadToken:
		hubError(w, http.StatusForbidden, "", "You don't have the rights to "+what)
	default:
		hubError(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
	}
	return true
}

func gitOID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// serveWrite answers the write side's API requests; it reports whether
// the request was one of them. s.mu is held.
func (s *Server) serveWrite(w http.ResponseWriter, r *http.Request) bool {
	s.initWrite()
	p := r.URL.Path
	if r.Method != http.MethodPost {
		return false
	}
	body, _ := io.ReadAll(r.Body)
	s.Received.Write(body)
	switch {
	case p == "/api/repos/create":
		s.create(w, r, body)
	case p == "/api/complete_multipart":
		s.complete(w, r, body)
	case strings.HasPrefix(p, "/datasets/") && strings.HasSuffix(p, ".git/info/lfs/objects/batch"):
		s.batch(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/datasets/"), ".git/info/lfs/objects/batch"), body)
	case strings.HasPrefix(p, "/datasets/") && strings.HasSuffix(p, ".git/info/lfs/objects/verify"):
		s.verify(w, r, body)
	case strings.HasPrefix(p, "/api/datasets/"):
		id, rest := split2(strings.TrimPrefix(p, "/api/datasets/"))
		verb, rev, _ := strings.Cut(rest, "/")
		if verb != "paths-info" && verb != "preupload" && verb != "commit" {
			return false
		}
		if _, ok := s.Datasets[id]; !ok {
			hubError(w, http.StatusNotFound, "RepoNotFound", "Repository Not Found for url: "+r.URL.String())
			return true
		}
		if rev != "main" {
			hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
			return true
		}
		switch verb {
		case "paths-info":
			s.pathsInfo(w, r, id, body)
		case "preupload":
			s.preupload(w, r, id, body)
		case "commit":
			s.takeCommit(w, r, id, body)
		}
	default:
		return false
	}
	return true
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Name, Organization, Type string
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Name == "" {
		hubError(w, http.StatusBadRequest, "", "bad request")
		return
	}
	if s.authWrite(w, r, "create a dataset under the namespace "+req.Organization) {
		return
	}
	if req.Type != "dataset" {
		hubError(w, http.StatusBadRequest, "", "this fake holds datasets only")
		return
	}
	id := req.Organization + "/" + req.Name
	if _, ok := s.Datasets[id]; ok {
		hubError(w, http.StatusConflict, "", "You already created this dataset repo")
		return
	}
	s.Datasets[id] = map[string][]byte{".gitattributes": []byte("*.parquet filter=lfs diff=lfs merge=lfs -text\n*.png filter=lfs diff=lfs merge=lfs -text\n")}
	s.heads[id] = gitOID([]byte(id))
	json.NewEncoder(w).Encode(map[string]string{"url": s.API.URL + "/datasets/" + id})
}

func (s *Server) pathsInfo(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	if a := r.Header.Get("Authorization"); a != "" && a != "Bearer "+s.Token && a != "Bearer "+s.ReadToken {
		hubError(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
		return
	}
	var req struct {
		Paths []string `json:"paths"`
	}
	json.Unmarshal(body, &req)
	out := []map[string]any{}
	for _, p := range req.Paths {
		b, ok := s.Datasets[id][p]
		if !ok {
			continue
		}
		e := map[string]any{"type": "file", "path": p, "size": len(b), "oid": gitOID(b)}
		if s.lfsPaths[id][p] {
			e["lfs"] = map[string]any{"oid": sum(b), "size": len(b), "pointerSize": 134}
		}
		out = append(out, e)
	}
	json.NewEncoder(w).Encode(out)
}

// lfsFile is the fake's rule for what goes to the LFS store: Parquet and
// PNG files, files of 10 MB or more, and binary content (a NUL byte in
// the first 512 bytes).
func lfsFile(p string, size int64, sample []byte) bool {
	switch path.Ext(p) {
	case ".parquet", ".png":
		return true
	}
	return size >= 10<<20 || bytes.IndexByte(sample, 0) >= 0
}

func (s *Server) preupload(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	if s.authWrite(w, r, "upload to "+id) {
		return
	}
	var req struct {
		Files []struct {
			Path   string `json:"path"`
			Sample string `json:"sample"`
			Size   int64  `json:"size"`
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		hubError(w, http.StatusBadRequest, "", "bad request")
		return
	}
	var out []map[string]any
	for _, f := range req.Files {
		sample, _ := base64.StdEncoding.DecodeString(f.Sample)
		mode := "regular"
		if lfsFile(f.Path, f.Size, sample) {
			mode = "lfs"
		}
		out = append(out, map[string]any{"path": f.Path, "uploadMode": mode, "shouldIgnore": false})
	}
	json.NewEncoder(w).Encode(map[string]any{"files": out})
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	if _, ok := s.Datasets[id]; !ok {
		hubError(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
		return
	}
	if s.authWrite(w, r, "upload to "+id) {
		return
	}
	if r.Header.Get("Accept") != "application/vnd.git-lfs+json" {
		hubError(w, http.StatusNotAcceptable, "", "Accept must be application/vnd.git-lfs+json")
		return
	}
	var req struct {
		Operation string `json:"operation"`
		Objects   []struct {
			OID  string `json:"oid"`
			Size int64  `json:"size"`
		} `json:"objects"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Operation != "upload" {
		hubError(w, http.StatusBadRequest, "", "bad request")
		return
	}
	var objs []map[string]any
	for _, o := range req.Objects {
		ob := map[string]any{"oid": o.OID, "size": o.Size}
		if b, ok := s.lfs[o.OID]; ok && int64(len(b)) == o.Size {
			objs = append(objs, ob)
			continue
		}
		verify := map[string]any{"href": s.API.URL + "/datasets/" + id + ".git/info/lfs/objects/verify", "header": map[string]string{}}
		if s.MultipartAbove > 0 && o.Size > s.MultipartAbove {
			h := map[string]string{"chunk_size": strconv.FormatInt(s.ChunkSize, 10)}
			for i := int64(1); (i-1)*s.ChunkSize < o.Size; i++ {
				h[strconv.FormatInt(i, 10)] = fmt.Sprintf("%s/part/%s/%d?X-Amz-Signature=storesig", s.Store.URL, o.OID, i)
			}
			ob["actions"] = map[string]any{"upload": map[string]any{"href": s.API.URL + "/api/complete_multipart?oid=" + o.OID, "header": h}, "verify": verify}
		} else {
			ob["actions"] = map[string]any{"upload": map[string]any{"href": s.Store.URL + "/object/" + o.OID + "?X-Amz-Signature=storesig", "header": map[string]string{}}, "verify": verify}
		}
		objs = append(objs, ob)
	}
	w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
	json.NewEncoder(w).Encode(map[string]any{"transfer": "basic", "objects": objs})
}

func (s *Server) verify(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	}
	json.Unmarshal(body, &req)
	if b, ok := s.lfs[req.OID]; !ok || int64(len(b)) != req.Size {
		hubError(w, http.StatusNotFound, "", "object "+req.OID+" is not in the store")
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		OID   string `json:"oid"`
		Parts []struct {
			PartNumber int    `json:"partNumber"`
			ETag       string `json:"etag"`
		} `json:"parts"`
	}
	json.Unmarshal(body, &req)
	var all []byte
	for i, p := range req.Parts {
		b, ok := s.parts[req.OID][p.PartNumber]
		if !ok || p.PartNumber != i+1 || p.ETag != `"`+sum(b)+`"` {
			hubError(w, http.StatusBadRequest, "", fmt.Sprintf("part %d of %s is missing or its etag is wrong", p.PartNumber, req.OID))
			return
		}
		all = append(all, b...)
	}
	if sum(all) != req.OID {
		hubError(w, http.StatusBadRequest, "", "the parts of "+req.OID+" do not make it")
		return
	}
	s.lfs[req.OID] = all
	delete(s.parts, req.OID)
	w.WriteHeader(http.StatusOK)
}

// servePut stores an object or a part on the store server; it reports
// whether the request was one.
func (s *Server) servePut(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPut {
		return false
	}
	s.mu.Lock()
	s.initWrite()
	s.StoreAuth = append(s.StoreAuth, r.Header.Get("Authorization"))
	if r.URL.Query().Get("X-Amz-Signature") != "storesig" {
		s.mu.Unlock()
		http.Error(w, "SignatureDoesNotMatch", http.StatusForbidden)
		return true
	}
	fail := false
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	oid := parts[len(parts)-1]
	if parts[0] == "part" && len(parts) == 3 {
		oid = parts[1]
	} else if s.FailPut > 0 {
		s.FailPut--
		fail = s.FailPut == 0
	}
	s.Puts[oid]++
	stalled, release := s.Stalled, s.Release
	s.mu.Unlock()
	if fail {
		half := make([]byte, r.ContentLength/2)
		n, _ := io.ReadFull(r.Body, half)
		s.mu.Lock()
		s.Received.Write(half[:n])
		s.mu.Unlock()
		if stalled != nil {
			stalled <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
		panic(http.ErrAbortHandler)
	}
	b, err := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Received.Write(b)
	if err != nil || int64(len(b)) != r.ContentLength {
		http.Error(w, "short body", http.StatusBadRequest)
		return true
	}
	if parts[0] == "part" && len(parts) == 3 {
		n, _ := strconv.Atoi(parts[2])
		if s.parts[oid] == nil {
			s.parts[oid] = map[int][]byte{}
		}
		s.parts[oid][n] = b
		w.Header().Set("ETag", `"`+sum(b)+`"`)
		w.WriteHeader(http.StatusOK)
		return true
	}
	if sum(b) != oid {
		http.Error(w, "BadDigest", http.StatusBadRequest)
		return true
	}
	s.lfs[oid] = b
	w.WriteHeader(http.StatusOK)
	return true
}

func (s *Server) takeCommit(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	if s.authWrite(w, r, "push to "+id) {
		return
	}
	if r.Header.Get("Content-Type") != "application/x-ndjson" {
		hubError(w, http.StatusBadRequest, "", "the commit must be NDJSON")
		return
	}
	if s.RejectCommit != nil {
		hubError(w, s.RejectCommit.Status, "", s.RejectCommit.Msg)
		return
	}
	type line struct {
		Key   string `json:"key"`
		Value struct {
			Summary  string `json:"summary"`
			Path     string `json:"path"`
			Content  string `json:"content"`
			Encoding string `json:"encoding"`
			Algo     string `json:"algo"`
			OID      string `json:"oid"`
			Size     int64  `json:"size"`
		} `json:"value"`
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 256<<20)
	var header *line
	files := map[string][]byte{}
	lfs := map[string]bool{}
	var order []string
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			hubError(w, http.StatusBadRequest, "", "a line of the commit is not JSON")
			return
		}
		switch l.Key {
		case "header":
			header = &l
			continue
		case "file":
			if l.Value.Encoding != "base64" {
				hubError(w, http.StatusBadRequest, "", "unknown encoding "+l.Value.Encoding)
				return
			}
			b, err := base64.StdEncoding.DecodeString(l.Value.Content)
			if err != nil {
				hubError(w, http.StatusBadRequest, "", "the content of "+l.Value.Path+" is not base64")
				return
			}
			if lfsFile(l.Value.Path, int64(len(b)), b[:min(512, len(b))]) {
				hubError(w, http.StatusUnprocessableEntity, "", "Your push was rejected because it contains binary files: "+l.Value.Path+" must go through the LFS store")
				return
			}
			files[l.Value.Path] = b
		case "lfsFile":
			b, ok := s.lfs[l.Value.OID]
			if !ok || l.Value.Algo != "sha256" || int64(len(b)) != l.Value.Size {
				hubError(w, http.StatusUnprocessableEntity, "", "Your push was rejected because an LFS pointer pointed to a file that does not exist: "+l.Value.Path)
				return
			}
			files[l.Value.Path] = b
			lfs[l.Value.Path] = true
		default:
			hubError(w, http.StatusBadRequest, "", "unknown key "+l.Key)
			return
		}
		order = append(order, l.Value.Path)
	}
	if header == nil || header.Value.Summary == "" {
		hubError(w, http.StatusBadRequest, "", "the commit has no header with a summary")
		return
	}
	if len(order) == 0 {
		hubError(w, http.StatusBadRequest, "", "No files have been modified since last commit")
		return
	}
	if s.lfsPaths[id] == nil {
		s.lfsPaths[id] = map[string]bool{}
	}
	for p, b := range files {
		s.Datasets[id][p] = b
		s.lfsPaths[id][p] = lfs[p]
	}
	sort.Strings(order)
	h := sha1.New()
	fmt.Fprint(h, s.heads[id], strings.Join(order, "\n"), len(s.Commits))
	c := Pushed{Repo: id, ID: hex.EncodeToString(h.Sum(nil)), Summary: header.Value.Summary, Files: order}
	s.heads[id] = c.ID
	s.Commits = append(s.Commits, c)
	json.NewEncoder(w).Encode(map[string]any{"success": true, "commitOid": c.ID, "commitUrl": s.API.URL + "/datasets/" + id + "/commit/" + c.ID})
}
