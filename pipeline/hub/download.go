package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/promoral/promoral/pipeline/dataset"
)

// Fetched is what a download learned of its file.
type Fetched struct {
	Size   int64
	SHA256 string
	// Commit is the hub's X-Repo-Commit header, when it sent one.
	Commit string
	// Linked is the sha256 the hub's X-Linked-Etag header gives for a
	// file in its large-file store ("" when it gave none).
	Linked string
}

// attempts is how often a download whose body broke off is resumed
// before it fails.
const attempts = 3

// partSuffix marks a download in progress. Loads read only the final
// name, so a part is never used as data.
const partSuffix = ".part"

// Download fetches f into dest: into dest.part first, resumed with a Range
// request when a part is there (an interrupted pull), verified against
// want (f's sha256 from the lock or the hub; "" to only measure it) and
// size, then renamed to dest. On a failure the part is removed, so the
// cache never holds a partial file; on an interruption (ctx cancelled, or
// the process killed) the part stays for the next pull to resume.
func (c *Client) Download(ctx context.Context, name string, ref *dataset.Hub, f File, dest string, prog dataset.Progress) (*Fetched, error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return nil, err
	}
	// One download per dataset folder at a time, across processes: two
	// pulls of one file would append to one part. The second waits, then
	// finds the file the first one verified and moved in.
	unlock, waited, err := lockDir(ctx, filepath.Dir(dest))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(dest); err == nil && (waited || f.SHA256 != "") {
		sum, size, err := hashFile(dest)
		if err != nil {
			return nil, err
		}
		if (f.SHA256 == "" || strings.EqualFold(sum, f.SHA256)) && (f.Size <= 0 || size == f.Size) {
			return &Fetched{Size: size, SHA256: sum}, nil
		}
	}
	part := dest + partSuffix
	var meta Fetched
	var lastErr error
	done := false
	var add func(int)
	var end func(error)
	for try := 0; try < attempts; try++ {
		have := int64(0)
		if st, err := os.Stat(part); err == nil {
			have = st.Size()
		}
		if f.Size > 0 && have > f.Size {
			os.Remove(part)
			have = 0
		}
		total, err := c.fetchOnce(ctx, name, ref, f, part, have, &meta, func(size int64, have int64) {
			if prog != nil && add == nil {
				add, end = prog.Start(f.Path, size, have)
			}
		}, func(k int) {
			if add != nil {
				add(k)
			}
		})
		if err == nil {
			meta.Size, done = total, true
			break
		}
		lastErr = err
		if ctx.Err() != nil {
			// Interrupted: keep the part for the next pull.
			if end != nil {
				end(ctx.Err())
			}
			return nil, ctx.Err()
		}
		var he *Error
		if errors.As(err, &he) || !errors.Is(err, io.ErrUnexpectedEOF) {
			os.Remove(part)
			if end != nil {
				end(err)
			}
			return nil, err
		}
	}
	if !done {
		got := int64(0)
		if st, err := os.Stat(part); err == nil {
			got = st.Size()
		}
		os.Remove(part)
		err := &Error{Dataset: name, Msg: fmt.Sprintf("the download of %s from %s broke off %d times (last at %d of %s bytes: %v); nothing was kept; pull again, or check the network", f.Path, ref.ID, attempts, got, sizeText(f.Size), lastErr)}
		if end != nil {
			end(err)
		}
		return nil, err
	}
	sum, size, err := hashFile(part)
	if err != nil {
		os.Remove(part)
		return nil, err
	}
	changed := false
	fail := func(msg string) (*Fetched, error) {
		os.Remove(part)
		err := &Error{Dataset: name, Msg: msg, Changed: changed}
		if end != nil {
			end(err)
		}
		return nil, err
	}
	if f.Size > 0 && size != f.Size {
		changed = true
		return fail(fmt.Sprintf("%s from %s has %d bytes, but %d were expected; nothing was kept", f.Path, ref.ID, size, f.Size))
	}
	if f.SHA256 != "" && !strings.EqualFold(sum, f.SHA256) {
		changed = true
		return fail(fmt.Sprintf("%s from %s has sha256 %s, but %s was expected; nothing was kept", f.Path, ref.ID, sum, f.SHA256))
	}
	if f.SHA256 == "" && meta.Linked != "" && !strings.EqualFold(sum, meta.Linked) {
		return fail(fmt.Sprintf("%s from %s has sha256 %s, but the hub's X-Linked-Etag says %s: the download is corrupt; nothing was kept; pull again", f.Path, ref.ID, sum, meta.Linked))
	}
	if err := os.Rename(part, dest); err != nil {
		return fail(fmt.Sprintf("cannot move the download into the cache: %v", err))
	}
	if end != nil {
		end(nil)
	}
	meta.Size, meta.SHA256 = size, sum
	return &meta, nil
}

// fetchOnce makes one request for the bytes of f from have on and appends
// them to part. It returns the file's full size.
func (c *Client) fetchOnce(ctx context.Context, name string, ref *dataset.Hub, f File, part string, have int64, meta *Fetched, start func(size, have int64), add func(int)) (int64, error) {
	_, total, err := c.fetchBody(ctx, name, ref, f, part, have, meta, start, add)
	return total, err
}

// fetchBody is fetchOnce, also returning the bytes written.
func (c *Client) fetchBody(ctx context.Context, name string, ref *dataset.Hub, f File, part string, have int64, meta *Fetched, start func(size, have int64), add func(int)) (int64, int64, error) {
	req, err := c.request(ctx, http.MethodGet, f.URL)
	if err != nil {
		return 0, 0, err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	hc := *c.HTTP
	hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		// The hub's own answer (a 302 to its file store) carries the
		// commit and the file's hash.
		if resp := r.Response; resp != nil {
			noteHeaders(meta, resp.Header)
		}
		// The token is for the hub only, never for the file store it
		// redirects to.
		if r.URL.Host != via[0].URL.Host {
			r.Header.Del("Authorization")
		}
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		return 0, 0, c.netError(name, ref, err)
	}
	defer resp.Body.Close()
	noteHeaders(meta, resp.Header)
	var out *os.File
	total := f.Size
	switch resp.StatusCode {
	case http.StatusPartialContent:
		from, size, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || from != have {
			// Not the bytes asked for: start over.
			os.Remove(part)
			return 0, 0, io.ErrUnexpectedEOF
		}
		if size > 0 {
			total = size
		}
		out, err = os.OpenFile(part, os.O_WRONLY|os.O_APPEND, 0o644)
	case http.StatusOK:
		have = 0
		if resp.ContentLength >= 0 {
			total = resp.ContentLength
		}
		out, err = os.Create(part)
	case http.StatusRequestedRangeNotSatisfiable:
		if f.Size > 0 && have == f.Size {
			return 0, have, nil // the part was whole
		}
		os.Remove(part)
		return 0, 0, io.ErrUnexpectedEOF
	default:
		return 0, 0, c.statusError(name, ref, resp)
	}
	if err != nil {
		return 0, 0, err
	}
	start(total, have)
	n, err := io.Copy(out, &counter{r: resp.Body, add: add})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && total > 0 && have+n < total {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && ctx.Err() != nil {
		return n, 0, ctx.Err()
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		// A body cut off by the peer reads as an unexpected EOF; any
		// other read error is resumable the same way.
		err = fmt.Errorf("%w: %v", io.ErrUnexpectedEOF, err)
	}
	return n, have + n, err
}

func noteHeaders(meta *Fetched, h http.Header) {
	if v := h.Get("X-Repo-Commit"); v != "" && meta.Commit == "" {
		meta.Commit = v
	}
	if v := strings.Trim(strings.TrimPrefix(h.Get("X-Linked-Etag"), "W/"), `"`); len(v) == 64 && meta.Linked == "" {
		meta.Linked = v
	}
}

// contentRange parses "bytes FROM-TO/SIZE" (SIZE may be *).
func contentRange(v string) (from, size int64, ok bool) {
	v, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	from, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if sz != "*" {
		if size, err = strconv.ParseInt(sz, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return from, size, true
}

type counter struct {
	r   io.Reader
	add func(int)
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.add(n)
	}
	return n, err
}

// hashFile is a file's sha256 (hex) and size.
func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func sizeText(n int64) string {
	if n <= 0 {
		return "?"
	}
	return strconv.FormatInt(n, 10)
}

// lockDir takes an exclusive lock on a folder (flock on the folder itself,
// so no lock file is left in the cache), waiting while another process or
// pull holds it, until ctx ends. waited says whether it had to wait.
func lockDir(ctx context.Context, dir string) (unlock func(), waited bool, err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	for {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
				d.Close()
			}, waited, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			d.Close()
			return nil, false, fmt.Errorf("cannot lock the dataset folder %s: %v", dir, err)
		}
		waited = true
		select {
		case <-ctx.Done():
			d.Close()
			return nil, false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
