// Package hub fetches datasets named by Hugging Face hub reference into a
// shared cache, pins them in a lock file beside the run file and verifies
// them at every load. The hub's address is HF_ENDPOINT (default
// https://huggingface.co), as for the hub's own client; the token is
// HF_TOKEN or the hub's token file, and is never printed.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/promoral/promoral/pipeline/dataset"
)

// DefaultEndpoint is the hub's address when HF_ENDPOINT is unset.
const DefaultEndpoint = "https://huggingface.co"

// Client talks to the hub's API and file endpoints.
type Client struct {
	Endpoint string
	// Token is the user's hub token ("" for none). It is sent to the hub
	// only (a redirect to another host drops it) and never printed.
	Token string
	// TokenFrom says where the token came from (HF_TOKEN or a file), for
	// messages.
	TokenFrom string
	HTTP      *http.Client
}

// FromEnv is a client for HF_ENDPOINT with the user's token.
func FromEnv() *Client {
	c := &Client{Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"), HTTP: &http.Client{Timeout: 0}}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if t := strings.TrimSpace(os.Getenv("HF_TOKEN")); t != "" {
		c.Token, c.TokenFrom = t, "HF_TOKEN"
	} else if p := TokenFile(); p != "" {
		if data, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(data)) != "" {
			c.Token, c.TokenFrom = strings.TrimSpace(string(data)), p
		}
	}
	return c
}

// TokenFile is where the hub's own client keeps the token: HF_TOKEN_PATH,
// else $HF_HOME/token, else ~/.cache/huggingface/token.
func TokenFile() string {
	if p := os.Getenv("HF_TOKEN_PATH"); p != "" {
		return p
	}
	if h := os.Getenv("HF_HOME"); h != "" {
		return filepath.Join(h, "token")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "huggingface", "token")
}

// File is one data file of a resolved dataset, as the lock records it.
type File struct {
	// Path is the file's path in the cache below the dataset's revision:
	// its path in the repository, or config/split/name for the Parquet
	// conversion.
	Path   string `yaml:"path"`
	URL    string `yaml:"url"`
	Size   int64  `yaml:"size"`
	SHA256 string `yaml:"sha256"`
}

// Resolved is a reference resolved to a commit and its files; a file's
// SHA256 is "" when the hub does not say it before the download.
type Resolved struct {
	Commit string
	Files  []File
}

// Error is a refusal or failure of the hub about one dataset.
type Error struct {
	Dataset string // the task (or name) the dataset belongs to
	Status  int
	Msg     string
	// Net: the hub could not be reached at all; Endpoint is the address
	// tried, Ref the dataset asked for and Cause the reason in a few words
	// (host not found, connection refused, timed out).
	Net      bool
	Endpoint string
	Ref      string
	Cause    string
	// Changed: a whole download did not match the size or sha256 it was
	// fetched for (from the lock, or the hub's listing).
	Changed bool
}

func (e *Error) Error() string { return "dataset " + e.Dataset + ": " + e.Msg }

// As gives the error as a *dataset.Unreachable when the hub could not be
// reached at all (Net).
func (e *Error) As(target any) bool {
	u, ok := target.(**dataset.Unreachable)
	if !ok || !e.Net {
		return false
	}
	*u = &dataset.Unreachable{Ref: e.Ref, Endpoint: e.Endpoint, Cause: e.Cause}
	return true
}

type revisionInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
		Size      int64  `json:"size"`
		LFS       *struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"lfs"`
	} `json:"siblings"`
}

// Resolve asks the hub for the reference's commit and files.
func (c *Client) Resolve(ctx context.Context, name string, ref *dataset.Hub) (*Resolved, error) {
	if len(ref.Files) == 0 {
		return c.resolveParquet(ctx, name, ref)
	}
	var info revisionInfo
	u := fmt.Sprintf("%s/api/datasets/%s/revision/%s?blobs=true", c.Endpoint, ref.ID, url.PathEscape(ref.Rev()))
	if err := c.getJSON(ctx, name, ref, u, &info); err != nil {
		return nil, err
	}
	if err := checkCommit(name, ref, info.SHA, u); err != nil {
		return nil, err
	}
	r := &Resolved{Commit: info.SHA}
	for _, want := range ref.Files {
		found := false
		for _, s := range info.Siblings {
			if s.RFilename != want {
				continue
			}
			f := File{Path: want, URL: fmt.Sprintf("%s/datasets/%s/resolve/%s/%s", c.Endpoint, ref.ID, info.SHA, escapePath(want)), Size: s.Size}
			if s.LFS != nil {
				f.SHA256, f.Size = s.LFS.SHA256, s.LFS.Size
			}
			r.Files = append(r.Files, f)
			found = true
		}
		if !found {
			var names []string
			for _, s := range info.Siblings {
				names = append(names, s.RFilename)
			}
			return nil, &Error{Dataset: name, Status: http.StatusNotFound, Msg: fmt.Sprintf("%s at revision %s has no file %q; fix dataset.hub.files (the repository holds: %s)", ref.ID, ref.Rev(), want, strings.Join(names, ", "))}
		}
	}
	return r, nil
}

// resolveParquet reads the hub's list of the Parquet conversion's files
// for config and split, and the conversion branch's commit.
func (c *Client) resolveParquet(ctx context.Context, name string, ref *dataset.Hub) (*Resolved, error) {
	config := ref.Config
	if config == "" {
		config = "default"
	}
	var urls []string
	u := fmt.Sprintf("%s/api/datasets/%s/parquet/%s/%s", c.Endpoint, ref.ID, url.PathEscape(config), url.PathEscape(ref.Split))
	if err := c.getJSON(ctx, name, ref, u, &urls); err != nil {
		return nil, err
	}
	if len(urls) == 0 {
		return nil, &Error{Dataset: name, Msg: fmt.Sprintf("the hub lists no Parquet files for %s config %q split %q; check dataset.hub.config and split", ref.ID, config, ref.Split)}
	}
	r := &Resolved{}
	var info revisionInfo
	rev := "refs/convert/parquet"
	if ref.Revision != "" {
		rev = ref.Revision
	}
	ru := fmt.Sprintf("%s/api/datasets/%s/revision/%s", c.Endpoint, ref.ID, url.PathEscape(rev))
	if err := c.getJSON(ctx, name, ref, ru, &info); err != nil {
		return nil, err
	}
	if err := checkCommit(name, ref, info.SHA, ru); err != nil {
		return nil, err
	}
	r.Commit = info.SHA
	for _, fu := range urls {
		p, err := url.Parse(fu)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") {
			return nil, &Error{Dataset: name, Msg: fmt.Sprintf("the hub listed %q as a Parquet file of %s, which is not an http(s) address", fu, ref.ID)}
		}
		base := path.Base(p.Path)
		if why := dataset.NameProblem(base); why != "" {
			return nil, &Error{Dataset: name, Msg: fmt.Sprintf("the hub listed %q as a Parquet file of %s, but its name %.80q %s: not a file name; nothing was fetched", oneLine(fu), ref.ID, base, why)}
		}
		r.Files = append(r.Files, File{Path: path.Join(config, ref.Split, base), URL: fu})
	}
	return r, nil
}

// checkCommit refuses a commit the hub answered that is not one: it names a
// folder of the dataset cache.
func checkCommit(name string, ref *dataset.Hub, sha, u string) error {
	if sha == "" {
		return &Error{Dataset: name, Msg: fmt.Sprintf("the hub's answer for %s names no commit (%s)", ref.ID, u)}
	}
	if !ValidCommit(sha) {
		return &Error{Dataset: name, Msg: fmt.Sprintf("the hub's answer for %s names the commit %.80q, which is not a commit (40 hex digits); nothing was fetched (%s)", ref.ID, sha, u)}
	}
	return nil
}

// ValidCommit says s is a commit id: 40 (or 64) hex digits.
func ValidCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i := range parts {
		parts[i] = url.PathEscape(parts[i])
	}
	return strings.Join(parts, "/")
}

func (c *Client) request(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "promoral")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

func (c *Client) getJSON(ctx context.Context, name string, ref *dataset.Hub, u string, v any) error {
	req, err := c.request(ctx, http.MethodGet, u)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	resp, err := c.HTTP.Do(req.WithContext(ctx))
	if err != nil {
		return c.netError(name, ref, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c.statusError(name, ref, resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return &Error{Dataset: name, Msg: fmt.Sprintf("the hub's answer for %s is not the JSON expected: %v", ref.ID, err)}
	}
	return nil
}

// netError is a failure to reach the hub at all.
func (c *Client) netError(name string, ref *dataset.Hub, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &Error{Dataset: name, Net: true, Endpoint: c.Endpoint, Ref: ref.ID, Cause: netCause(err),
		Msg: fmt.Sprintf("cannot reach the hub at %s for %s: %v", c.Endpoint, ref.ID, redact(err.Error(), c.Token))}
}

// netCause says in a few words why a request did not reach the server.
func netCause(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return "host " + dns.Name + " not found"
	case errors.As(err, &dns):
		return "cannot look up " + dns.Name
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH):
		return "network unreachable"
	case errors.As(err, &op) && op.Err != nil:
		return op.Err.Error()
	}
	msg := err.Error()
	if k := strings.LastIndex(msg, ": "); k >= 0 {
		msg = msg[k+2:]
	}
	return msg
}

// statusError turns the hub's refusals into what to do about them.
func (c *Client) statusError(name string, ref *dataset.Hub, resp *http.Response) error {
	code := resp.Header.Get("X-Error-Code")
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	detail := strings.TrimSpace(redact(string(body), c.Token))
	if detail != "" {
		detail = ": " + oneLine(detail)
	}
	e := &Error{Dataset: name, Status: resp.StatusCode}
	page := c.Endpoint + "/datasets/" + ref.ID
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		who := "no token was sent: set HF_TOKEN to a token of your hub account (or log in with the hub's CLI, which writes " + TokenFile() + ")"
		if c.Token != "" {
			who = "the token from " + c.TokenFrom + " was refused: check it belongs to the account that accepted the terms, or set HF_TOKEN to one that does"
		}
		e.Msg = fmt.Sprintf("the hub refused access to %s (HTTP %d%s); it is gated: accept its terms at %s while logged in, then %s", ref.ID, resp.StatusCode, codeNote(code), page, who)
	case resp.StatusCode == http.StatusNotFound && (code == "RevisionNotFound" || strings.Contains(strings.ToLower(detail), "revision")):
		e.Msg = fmt.Sprintf("the hub has no revision %q of %s (HTTP 404%s); fix dataset.hub.revision: a commit, branch or tag of %s", ref.Rev(), ref.ID, detail, page)
	case resp.StatusCode == http.StatusNotFound && code == "EntryNotFound":
		e.Msg = fmt.Sprintf("the hub has no such file or split of %s (HTTP 404%s); check dataset.hub.config, split and files against %s", ref.ID, detail, page)
	case resp.StatusCode == http.StatusNotFound:
		e.Msg = fmt.Sprintf("the hub has no dataset %s, or no config %q split %q of it (HTTP 404%s); check dataset.hub against %s (a private or gated dataset also answers 404 without a token: set HF_TOKEN)", ref.ID, ref.Config, ref.Split, detail, page)
	default:
		e.Msg = fmt.Sprintf("the hub answered HTTP %d for %s%s; try again later", resp.StatusCode, ref.ID, detail)
	}
	return e
}

func codeNote(code string) string {
	if code == "" {
		return ""
	}
	return ", " + code
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// redact removes the token from a text that may quote a request.
func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[token]")
}
