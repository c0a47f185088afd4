package hub

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/promoral/promoral/pipeline/secret"
)

// Repo is a repository of the hub to publish to.
type Repo struct {
	// Type is "dataset", "model" or "space".
	Type string
	// ID is owner/name.
	ID string
	// Revision is the branch commits go to ("main" when empty).
	Revision string
}

func (r Repo) rev() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

// String is the repository as an hf:// address.
func (r Repo) String() string {
	s := "hf://" + r.prefix() + r.ID
	if r.Revision != "" && r.Revision != "main" {
		s += "@" + r.Revision
	}
	return s
}

// prefix is the repository type's part of the hub's URLs ("" for models).
func (r Repo) prefix() string {
	if r.Type == "model" || r.Type == "" {
		return ""
	}
	return r.Type + "s/"
}

// Page is the repository's page on the hub.
func (r Repo) Page(endpoint string) string { return endpoint + "/" + r.prefix() + r.ID }

// ParseRepo reads an hf:// address: hf://datasets/ORG/NAME,
// hf://spaces/ORG/NAME or hf://ORG/NAME (a model), with @REVISION after
// the name for a branch other than main.
func ParseRepo(s string) (Repo, error) {
	rest, ok := strings.CutPrefix(s, "hf://")
	if !ok {
		return Repo{}, fmt.Errorf("%q is not a hub address: write hf://datasets/ORG/NAME", s)
	}
	r := Repo{Type: "model"}
	for _, t := range []string{"dataset", "space", "model"} {
		if after, ok := strings.CutPrefix(rest, t+"s/"); ok {
			r.Type, rest = t, after
			break
		}
	}
	rest, r.Revision, _ = strings.Cut(rest, "@")
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	if len(parts) != 2 || !validRepoPart(parts[0]) || !validRepoPart(parts[1]) {
		return Repo{}, fmt.Errorf("%q does not name one repository: write hf://datasets/ORG/NAME (letters, digits, '-', '_' and '.', no path after the name)", s)
	}
	if strings.Contains(s, "@") && (r.Revision == "" || strings.ContainsAny(r.Revision, " ~^:?*[\\")) {
		return Repo{}, fmt.Errorf("%q names no usable branch after '@': write hf://datasets/ORG/NAME@BRANCH, or leave '@' out for main", s)
	}
	r.ID = parts[0] + "/" + parts[1]
	return r, nil
}

func validRepoPart(s string) bool {
	if s == "" || len(s) > 96 || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "-") || strings.Contains(s, "..") {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Upload is one file to put in a repository: a file on disk (Local) or
// bytes in memory (Data).
type Upload struct {
	// Path is the file's path in the repository.
	Path  string
	Local string
	Data  []byte
	// Size and SHA256 (hex) are filled by Measure.
	Size   int64
	SHA256 string
	// gitOID is the git blob id the hub gives a file it keeps in git.
	gitOID string
	sample []byte
	lfs    bool
}

// Measure reads the file once for its size, sha256, git blob id and the
// first 512 bytes the hub's preupload check looks at.
func (u *Upload) Measure() error {
	var r io.Reader
	if u.Local != "" {
		f, err := os.Open(u.Local)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		u.Size = st.Size()
		r = f
	} else {
		u.Size = int64(len(u.Data))
		r = bytes.NewReader(u.Data)
	}
	h256, h1 := sha256.New(), sha1.New()
	fmt.Fprintf(h1, "blob %d\x00", u.Size)
	head := &headWriter{max: 512}
	n, err := io.Copy(io.MultiWriter(h256, h1, head), r)
	if err != nil {
		return err
	}
	if n != u.Size {
		return fmt.Errorf("%s changed while it was read (%d bytes, then %d): publish again when nothing writes to it", u.Local, u.Size, n)
	}
	u.SHA256, u.gitOID, u.sample = hex.EncodeToString(h256.Sum(nil)), hex.EncodeToString(h1.Sum(nil)), head.b
	return nil
}

type headWriter struct {
	b   []byte
	max int
}

func (h *headWriter) Write(p []byte) (int, error) {
	if k := h.max - len(h.b); k > 0 {
		h.b = append(h.b, p[:min(k, len(p))]...)
	}
	return len(p), nil
}

func (u *Upload) open() (io.ReadSeekCloser, error) {
	if u.Local != "" {
		return os.Open(u.Local)
	}
	return nopCloser{bytes.NewReader(u.Data)}, nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// PushOptions are a push's commit message and what it says as it goes.
type PushOptions struct {
	// Message is the commit's summary.
	Message string
	// Description is the commit's longer text.
	Description string
	// Private makes a repository the push creates private.
	Private bool
	// Log, when set, gets a line per step (a file sent, the commit).
	Log func(string)
}

// PushResult says what a push did.
type PushResult struct {
	// Created: the repository did not exist and the push created it.
	Created bool
	// Unchanged are the files the hub already held with the same content.
	Unchanged []string
	// Committed are the files the commit added or replaced.
	Committed []string
	// Uploaded are the large files whose bytes were sent; Present those
	// the hub's large-file store already held (from an interrupted push,
	// or another path with the same content), so nothing was sent.
	Uploaded, Present []string
	// Bytes is what was sent of file content: large files' bytes and
	// small files' bytes in the commit.
	Bytes int64
	// Commit is the new commit's id, "" when nothing changed (no commit
	// was made); URL its page.
	Commit, URL string
}

// PushError is a refusal or failure of the hub during a push.
type PushError struct {
	Status int
	// Code is the hub's X-Error-Code ("RepoNotFound", ...), when it sent one.
	Code string
	Msg  string
}

func (e *PushError) Error() string { return e.Msg }

// Push puts files in a repository in one commit: it creates the
// repository when it is absent, leaves out the files the hub already holds
// with the same content, sends large files through the hub's large-file
// store (an object the store already holds is not sent again, so a push
// that was interrupted resumes), then commits. When every file is
// unchanged it makes no commit. The token goes to the hub's own address
// only, never to the storage addresses the hub hands out, and never into
// a message.
func (c *Client) Push(ctx context.Context, repo Repo, files []*Upload, o PushOptions) (*PushResult, error) {
	if c.Token == "" {
		return nil, &PushError{Status: http.StatusUnauthorized, Msg: "publishing needs a hub token with write access: set HF_TOKEN (in the environment or in .env) to a token made at " + c.Endpoint + "/settings/tokens, or log in with the hub's CLI, which writes " + TokenFile()}
	}
	logf := func(format string, a ...any) {
		if o.Log != nil {
			o.Log(secret.RedactKey(fmt.Sprintf(format, a...), c.Token))
		}
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.Path] {
			return nil, fmt.Errorf("two files would both be %s in %s", f.Path, repo.ID)
		}
		seen[f.Path] = true
		if f.SHA256 == "" {
			if err := f.Measure(); err != nil {
				return nil, err
			}
		}
	}
	if o.Message == "" {
		o.Message = "Upload with promoral"
	}
	res := &PushResult{}
	remote, err := c.pathsInfo(ctx, repo, files)
	var pe *PushError
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound && pe.Code == "RepoNotFound" {
		if err = c.createRepo(ctx, repo, o.Private); err != nil {
			return nil, err
		}
		res.Created = true
		logf("created %s", repo.Page(c.Endpoint))
		remote, err = c.pathsInfo(ctx, repo, files)
	}
	if err != nil {
		return nil, err
	}
	var todo []*Upload
	for _, f := range files {
		if r, ok := remote[f.Path]; ok && r.same(f) {
			res.Unchanged = append(res.Unchanged, f.Path)
			continue
		}
		todo = append(todo, f)
	}
	if len(todo) == 0 {
		logf("the hub already holds every file of this publish: no commit")
		return res, nil
	}
	if err := c.preupload(ctx, repo, todo); err != nil {
		return nil, err
	}
	var large []*Upload
	for _, f := range todo {
		if f.lfs {
			large = append(large, f)
		}
	}
	if len(large) > 0 {
		if err := c.sendLarge(ctx, repo, large, res, logf); err != nil {
			return nil, err
		}
	}
	if err := c.commit(ctx, repo, todo, o, res); err != nil {
		return nil, err
	}
	for _, f := range todo {
		res.Committed = append(res.Committed, f.Path)
		if !f.lfs {
			res.Bytes += f.Size
		}
	}
	return res, nil
}

// commas writes n with thousands separators: 12,209,307.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

type remoteFile struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

func (r remoteFile) same(f *Upload) bool {
	if r.Type != "" && r.Type != "file" {
		return false
	}
	if r.LFS != nil {
		return strings.EqualFold(r.LFS.OID, f.SHA256) && r.LFS.Size == f.Size
	}
	return strings.EqualFold(r.OID, f.gitOID) && r.Size == f.Size
}

// pathsInfo asks what the repository holds at the files' paths.
func (c *Client) pathsInfo(ctx context.Context, repo Repo, files []*Upload) (map[string]remoteFile, error) {
	out := map[string]remoteFile{}
	for start := 0; start < len(files); start += 100 {
		var paths []string
		for _, f := range files[start:min(start+100, len(files))] {
			paths = append(paths, f.Path)
		}
		var got []remoteFile
		u := fmt.Sprintf("%s/api/%ss/%s/paths-info/%s", c.Endpoint, repo.Type, repo.ID, url.PathEscape(repo.rev()))
		if err := c.postJSON(ctx, repo, "ask what "+repo.ID+" holds", u, map[string]any{"paths": paths, "expand": false}, &got); err != nil {
			return nil, err
		}
		for _, r := range got {
			out[r.Path] = r
		}
	}
	return out, nil
}

func (c *Client) createRepo(ctx context.Context, repo Repo, private bool) error {
	org, name, _ := strings.Cut(repo.ID, "/")
	body := map[string]any{"name": name, "organization": org, "type": repo.Type, "private": private}
	err := c.postJSON(ctx, repo, "create "+repo.ID, c.Endpoint+"/api/repos/create", body, nil)
	var pe *PushError
	if errors.As(err, &pe) && pe.Status == http.StatusConflict {
		return nil // created meanwhile
	}
	return err
}

// preupload asks the hub which files go to its large-file store (by its
// rules: the repository's .gitattributes, the size, binary content).
func (c *Client) preupload(ctx context.Context, repo Repo, files []*Upload) error {
	byPath := map[string]*Upload{}
	for start := 0; start < len(files); start += 100 {
		var req []map[string]any
		for _, f := range files[start:min(start+100, len(files))] {
			byPath[f.Path] = f
			req = append(req, map[string]any{"path": f.Path, "sample": base64.StdEncoding.EncodeToString(f.sample), "size": f.Size, "sha": f.SHA256})
		}
		var got struct {
			Files []struct {
				Path       string `json:"path"`
				UploadMode string `json:"uploadMode"`
			} `json:"files"`
		}
		u := fmt.Sprintf("%s/api/%ss/%s/preupload/%s", c.Endpoint, repo.Type, repo.ID, url.PathEscape(repo.rev()))
		if err := c.postJSON(ctx, repo, "prepare the upload to "+repo.ID, u, map[string]any{"files": req}, &got); err != nil {
			return err
		}
		for _, g := range got.Files {
			f := byPath[g.Path]
			if f == nil || (g.UploadMode != "lfs" && g.UploadMode != "regular") {
				return &PushError{Msg: fmt.Sprintf("the hub's preupload answer for %s is not what was expected (path %q, mode %q)", repo.ID, g.Path, g.UploadMode)}
			}
			// An empty file cannot go to the large-file store.
			f.lfs = g.UploadMode == "lfs" && f.Size > 0
		}
	}
	return nil
}

type lfsAction struct {
	Href   string            `json:"href"`
	Header map[string]string `json:"header"`
}

type lfsObject struct {
	OID     string `json:"oid"`
	Size    int64  `json:"size"`
	Actions *struct {
		Upload *lfsAction `json:"upload"`
		Verify *lfsAction `json:"verify"`
	} `json:"actions"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// sendLarge sends the large files' bytes by the git LFS batch protocol:
// the store answers, per object, where to put it, or nothing for an
// object it already holds.
func (c *Client) sendLarge(ctx context.Context, repo Repo, files []*Upload, res *PushResult, logf func(string, ...any)) error {
	byOID := map[string][]*Upload{}
	var objs []map[string]any
	for _, f := range files {
		if byOID[f.SHA256] == nil {
			objs = append(objs, map[string]any{"oid": f.SHA256, "size": f.Size})
		}
		byOID[f.SHA256] = append(byOID[f.SHA256], f)
	}
	var got struct {
		Transfer string      `json:"transfer"`
		Objects  []lfsObject `json:"objects"`
	}
	body := map[string]any{"operation": "upload", "transfers": []string{"basic", "multipart"}, "hash_algo": "sha256", "objects": objs, "ref": map[string]string{"name": repo.rev()}}
	u := fmt.Sprintf("%s/%s%s.git/info/lfs/objects/batch", c.Endpoint, repo.prefix(), repo.ID)
	if err := c.send(ctx, repo, "ask the large-file store of "+repo.ID+" where to upload", http.MethodPost, u, "application/vnd.git-lfs+json", jsonBody(body), &got, true); err != nil {
		return err
	}
	for _, ob := range got.Objects {
		fs := byOID[ob.OID]
		if len(fs) == 0 {
			return &PushError{Msg: fmt.Sprintf("the large-file store of %s answered for an object this publish did not ask about (%s)", repo.ID, ob.OID)}
		}
		f := fs[0]
		if ob.Error != nil {
			return &PushError{Status: ob.Error.Code, Msg: fmt.Sprintf("the large-file store of %s refused %s (%d: %s)", repo.ID, f.Path, ob.Error.Code, secret.RedactKey(oneLine(ob.Error.Message), c.Token))}
		}
		if ob.Actions == nil || ob.Actions.Upload == nil {
			for _, f := range fs {
				res.Present = append(res.Present, f.Path)
			}
			logf("%s: already in the hub's store (%s bytes), not sent again", f.Path, commas(f.Size))
			continue
		}
		up := ob.Actions.Upload
		logf("%s: sending %s bytes", f.Path, commas(f.Size))
		var err error
		if cs, ok := up.Header["chunk_size"]; ok {
			err = c.putParts(ctx, repo, f, up, cs)
		} else {
			err = c.putWhole(ctx, repo, f, up)
		}
		if err != nil {
			return err
		}
		if v := ob.Actions.Verify; v != nil {
			if err := c.send(ctx, repo, "verify "+f.Path+" in the large-file store of "+repo.ID, http.MethodPost, v.Href, "application/vnd.git-lfs+json", jsonBody(map[string]any{"oid": f.SHA256, "size": f.Size}), nil, c.sameHost(v.Href), v.Header); err != nil {
				return err
			}
		}
		res.Uploaded = append(res.Uploaded, f.Path)
		res.Present = append(res.Present, pathsOf(fs[1:])...)
		res.Bytes += f.Size
	}
	return nil
}

func pathsOf(fs []*Upload) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

// putWhole sends a file in one PUT to the address the store gave.
func (c *Client) putWhole(ctx context.Context, repo Repo, f *Upload, up *lfsAction) error {
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, up.Href, r)
	if err != nil {
		return &PushError{Msg: fmt.Sprintf("the large-file store of %s gave an unusable address for %s (%s)", repo.ID, f.Path, bareURL(up.Href))}
	}
	req.ContentLength = f.Size
	for k, v := range up.Header {
		req.Header.Set(k, v)
	}
	c.auth(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return c.transportError(ctx, "send "+f.Path+" to "+bareURL(up.Href), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return c.pushStatusError(repo, "store "+f.Path+" at "+bareURL(up.Href), resp)
	}
	return nil
}

// putParts sends a file in parts to the addresses the store gave (its
// header holds chunk_size and one address per part number), then posts
// the parts' ETags to complete it.
func (c *Client) putParts(ctx context.Context, repo Repo, f *Upload, up *lfsAction, chunk string) error {
	size, err := strconv.ParseInt(chunk, 10, 64)
	if err != nil || size <= 0 {
		return &PushError{Msg: fmt.Sprintf("the large-file store of %s gave chunk_size %q for %s, not a size", repo.ID, chunk, f.Path)}
	}
	type part struct {
		n    int
		href string
	}
	var parts []part
	for k, v := range up.Header {
		if n, err := strconv.Atoi(k); err == nil && n > 0 {
			parts = append(parts, part{n, v})
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].n < parts[j].n })
	if want := int((f.Size + size - 1) / size); len(parts) != want {
		return &PushError{Msg: fmt.Sprintf("the large-file store of %s gave %d part addresses for %s, which needs %d parts of %d bytes", repo.ID, len(parts), f.Path, want, size)}
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	type done struct {
		PartNumber int    `json:"partNumber"`
		ETag       string `json:"etag"`
	}
	var etags []done
	for i, p := range parts {
		if _, err := r.Seek(int64(i)*size, io.SeekStart); err != nil {
			return err
		}
		n := min(size, f.Size-int64(i)*size)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.href, io.LimitReader(r, n))
		if err != nil {
			return &PushError{Msg: fmt.Sprintf("the large-file store of %s gave an unusable address for part %d of %s", repo.ID, p.n, f.Path)}
		}
		req.ContentLength = n
		c.auth(req)
		resp, err := c.HTTP.Do(req)
		if err != nil {
			return c.transportError(ctx, fmt.Sprintf("send part %d of %d of %s to %s", p.n, len(parts), f.Path, bareURL(p.href)), err)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return c.pushStatusError(repo, fmt.Sprintf("store part %d of %s at %s", p.n, f.Path, bareURL(p.href)), resp)
		}
		tag := resp.Header.Get("ETag")
		if tag == "" {
			return &PushError{Msg: fmt.Sprintf("the large-file store of %s gave no ETag for part %d of %s", repo.ID, p.n, f.Path)}
		}
		etags = append(etags, done{p.n, tag})
	}
	return c.send(ctx, repo, "complete "+f.Path+" in the large-file store of "+repo.ID, http.MethodPost, up.Href, "application/vnd.git-lfs+json", jsonBody(map[string]any{"oid": f.SHA256, "parts": etags}), nil, c.sameHost(up.Href))
}

// commit posts the commit: a header line, then a line per file, small
// files inline (base64), large ones as pointers to the store's objects.
func (c *Client) commit(ctx context.Context, repo Repo, files []*Upload, o PushOptions, res *PushResult) error {
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriter(pw)
		enc := json.NewEncoder(bw)
		err := enc.Encode(map[string]any{"key": "header", "value": map[string]any{"summary": o.Message, "description": o.Description}})
		for _, f := range files {
			if err != nil {
				break
			}
			if f.lfs {
				err = enc.Encode(map[string]any{"key": "lfsFile", "value": map[string]any{"path": f.Path, "algo": "sha256", "oid": f.SHA256, "size": f.Size}})
				continue
			}
			err = writeInline(bw, f)
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	var got struct {
		CommitURL string `json:"commitUrl"`
		CommitOID string `json:"commitOid"`
	}
	u := fmt.Sprintf("%s/api/%ss/%s/commit/%s", c.Endpoint, repo.Type, repo.ID, url.PathEscape(repo.rev()))
	err := c.send(ctx, repo, "commit to "+repo.ID, http.MethodPost, u, "application/x-ndjson", pr, &got, true)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		var pe *PushError
		if errors.As(err, &pe) && pe.Status != 0 {
			pe.Msg += "; nothing was committed"
		}
		return err
	}
	res.Commit, res.URL = got.CommitOID, got.CommitURL
	return nil
}

// writeInline writes a small file's commit line, base64 streamed from
// the file.
func writeInline(w *bufio.Writer, f *Upload) error {
	p, _ := json.Marshal(f.Path)
	fmt.Fprintf(w, `{"key":"file","value":{"path":%s,"encoding":"base64","content":"`, p)
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	enc := base64.NewEncoder(base64.StdEncoding, w)
	if _, err := io.Copy(enc, r); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = w.WriteString("\"}}\n")
	return err
}

type body struct {
	r    io.Reader
	size int64
}

func jsonBody(v any) body {
	b, _ := json.Marshal(v)
	return body{bytes.NewReader(b), int64(len(b))}
}

func (c *Client) postJSON(ctx context.Context, repo Repo, what, u string, in, out any) error {
	return c.send(ctx, repo, what, http.MethodPost, u, "application/json", jsonBody(in), out, true)
}

// askTimeout bounds a question to the hub (paths-info, preupload, the
// LFS batch API); file transfers and the commit have none but Ctrl-C.
const askTimeout = 2 * time.Minute

// send makes one request of the hub (auth: the token goes with it) or of
// an address the hub gave (auth false: it does not), and decodes a JSON
// answer into out.
func (c *Client) send(ctx context.Context, repo Repo, what, method, u, ctype string, in any, out any, auth bool, extra ...map[string]string) error {
	var r io.Reader
	size := int64(-1)
	switch b := in.(type) {
	case body:
		r, size = b.r, b.size
	case io.Reader:
		r = b
	}
	if _, ok := in.(body); ok {
		// A question, not a transfer: the hub answers it at once.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, askTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return &PushError{Msg: fmt.Sprintf("cannot %s: the address %s is not usable", what, bareURL(u))}
	}
	if size >= 0 {
		req.ContentLength = size
	}
	req.Header.Set("User-Agent", "promoral")
	req.Header.Set("Content-Type", ctype)
	if strings.Contains(ctype, "git-lfs") {
		req.Header.Set("Accept", ctype)
	}
	for _, h := range extra {
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	if auth {
		c.auth(req)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return c.transportError(ctx, what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return c.pushStatusError(repo, what, resp)
	}
	if out == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
		return &PushError{Msg: fmt.Sprintf("cannot %s: the hub's answer is not the JSON expected (%v)", what, err)}
	}
	return nil
}

// auth adds the token to a request for the hub's own address; a request
// to any other host (a storage address) goes without it.
func (c *Client) auth(req *http.Request) {
	if c.Token != "" && c.sameHost(req.URL.String()) {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
}

func (c *Client) sameHost(u string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(c.Endpoint)
	return err1 == nil && err2 == nil && a.Scheme == b.Scheme && a.Host == b.Host
}

// bareURL is an address without its query, which for a storage address
// holds a signature.
func bareURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an address that does not parse)"
	}
	p.RawQuery, p.Fragment, p.User = "", "", nil
	return p.String()
}

func (c *Client) transportError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("interrupted while trying to %s: nothing was committed; publish again to resume (what the hub's store received is not sent twice): %w", what, ctx.Err())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its URL may carry a signature
	}
	return &PushError{Msg: fmt.Sprintf("cannot %s: %s; publish again to resume (what the hub's store holds is not sent twice)", what, secret.RedactKey(err.Error(), c.Token))}
}

// pushStatusError turns the hub's refusals into what to do about them.
func (c *Client) pushStatusError(repo Repo, what string, resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := resp.Header.Get("X-Error-Message")
	var j struct {
		Error any `json:"error"`
	}
	if msg == "" && json.Unmarshal(raw, &j) == nil && j.Error != nil {
		switch e := j.Error.(type) {
		case string:
			msg = e
		default:
			b, _ := json.Marshal(e)
			msg = string(b)
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	msg = oneLine(secret.RedactKey(msg, c.Token))
	code := resp.Header.Get("X-Error-Code")
	detail := fmt.Sprintf("HTTP %d%s", resp.StatusCode, codeNote(code))
	if msg != "" {
		detail += ": " + msg
	}
	e := &PushError{Status: resp.StatusCode, Code: code}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		e.Msg = fmt.Sprintf("the hub refused the token from %s (%s): set HF_TOKEN to a valid token with write access, made at %s/settings/tokens", c.TokenFrom, detail, c.Endpoint)
	case http.StatusForbidden:
		e.Msg = fmt.Sprintf("the hub would not let the token from %s %s (%s): use a token with write access to %s (a fine-grained token needs write on that namespace), or publish under your own name", c.TokenFrom, what, detail, strings.SplitN(repo.ID, "/", 2)[0])
	case http.StatusNotFound:
		e.Msg = fmt.Sprintf("cannot %s: the hub has no such repository or branch (%s); check the address %s (a branch other than main must exist first)", what, detail, repo)
		if code == "" && strings.Contains(strings.ToLower(msg), "repository not found") {
			e.Code = "RepoNotFound"
		}
	default:
		e.Msg = fmt.Sprintf("cannot %s: the hub answered %s", what, detail)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			e.Msg += "; publish again later (what was sent is not sent twice)"
		}
	}
	return e
}
