package journal

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/runfolder"
)

// Record is one line of the journal (runfolder.JournalRecord).
type Record = runfolder.JournalRecord

// lostInFlight is the error of a settlement record.
const lostInFlight = "no reply was recorded: the process stopped while this call was in flight"

type span struct {
	off int64
	n   int32
}

// MaxLine bounds one journal line. Replies are bounded on the wire
// (limits.max_reply_bytes, at most llm.MaxReplyBytesLimit), so a longer
// line was not written by this version: it is skipped, unread, as a miss.
const MaxLine = 4 * llm.MaxReplyBytesLimit

// Stats is what opening a journal found, and what lookups found since.
type Stats struct {
	Replies   int   `json:"replies"`   // reply records indexed
	Failed    int   `json:"failed"`    // failed attempts
	Damaged   int   `json:"damaged"`   // lines that are not records, skipped
	Oversized int   `json:"oversized"` // lines over MaxLine, skipped
	NoReply   int   `json:"no_reply"`  // records with neither a reply nor an error, skipped
	Trimmed   int64 `json:"trimmed"`   // bytes of a torn last line cut off
	// Lost counts intents without an outcome: calls that were in flight
	// when an earlier process died. Reported once: opening the journal for
	// writing settles them.
	Lost int `json:"lost_in_flight"`
	// Unusable counts reply records found unusable when looked up (no
	// choices, no content, not decodable): each is a miss.
	Unusable int `json:"unusable"`
}

// Journal is the append-only record of every model call of a run. An
// attempt's intent is appended before it is sent and its outcome (one
// write(2) of one line) before the reply is used, so a process killed at any
// instant loses at most the calls in flight, and the next open knows how many
// they were. A torn last line is cut off on open; a damaged line elsewhere is
// skipped with a warning (its call becomes a miss), never fatal.
//
// Memory: the index holds 4 bytes of a key and a packed offset per reply,
// never a reply (replyIndex).
type Journal struct {
	path  string
	mu    sync.Mutex
	f     *os.File
	size  int64
	index *replyIndex
	fsync bool
	ro    bool

	stats    Stats
	unusable atomic.Int64
	damaged  []int64 // offsets of the first few skipped lines, for the warning
	lost     map[[32]byte]bool
	idBase   string
	opened   int64 // the file's size once opened: later lines are this writer's
	idSeq    atomic.Uint64
	// head is the length of the journal's start that opening did not read
	// (OpenFrom): its replies are indexed on the first lookup.
	head int64
	// expect is the number of new replies the index has room reserved for
	// (Expect), kept for an index rebuilt by readHead.
	expect int

	// Group commit (Append): lines that arrive while one writer is in its
	// write go out together in the next one. A line's Append returns only
	// once its batch is written (and synced, with fsync), as before.
	cond       *sync.Cond
	writing    bool
	gather     []byte        // the lines of the batch gathering
	gathered   []pendingSpan // their replies to index once written
	batch      uint64        // number of the batch gathering
	written    uint64        // batches written (or failed) so far
	spare      []byte
	spareIx    []pendingSpan
	werr       error  // a failed write: the journal takes no more lines
	failedFrom uint64 // the batch whose write failed
}

// pendingSpan is a reply gathered for the next write: its key and its line's
// place within the batch.
type pendingSpan struct {
	k   [32]byte
	off int64
	n   int32
}

// OpenFrom opens (creating if needed) the journal at path and indexes its
// replies. It takes an exclusive lock so two runs cannot write the same
// journal, and settles intents left without an outcome. settled (nil:
// read the whole journal), called once the lock is held, returns the
// journal's size when an apply that finished every case wrote its outputs
// (its opening settled every earlier intent and each of its own calls got
// its outcome), or 0. Opening
// then reads the lines after that point only (the intents left by a later
// apply, a torn last line, their warnings), and the lines before it are
// indexed when a reply is first looked up: an apply that takes every case
// from the outputs in force never looks one up, and never pays for reading
// the whole journal. A point that is not the end of a line, or past the end
// of the file, is not trusted: the whole journal is read.
func OpenFrom(path string, fsync bool, settled func() int64) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("cannot open the journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by another promoral process (wait for it to finish)", path)
	}
	j := newJournal(path, f, false)
	j.fsync = fsync
	if settled != nil {
		j.head = lineEnd(f, settled())
	}
	pending, err := j.load()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := j.settle(pending); err != nil {
		f.Close()
		return nil, err
	}
	j.opened = j.size
	return j, nil
}

// OpenReadOnly indexes a journal without locking or changing it, so
// `plan` can read it while an apply is writing. A missing file is an empty
// journal.
func OpenReadOnly(path string) (*Journal, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return newJournal(path, nil, true), nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the journal: %w", err)
	}
	j := newJournal(path, f, true)
	pending, err := j.load()
	if err != nil {
		f.Close()
		return nil, err
	}
	j.stats.Lost = len(pending)
	return j, nil
}

func newJournal(path string, f *os.File, ro bool) *Journal {
	var b [4]byte
	rand.Read(b[:])
	j := &Journal{path: path, f: f, ro: ro, lost: map[[32]byte]bool{}, idBase: hex.EncodeToString(b[:]) + "."}
	j.index = newReplyIndex(j.keyAt)
	return j
}

// keyAt reads the key of the line at sp: the head holds the key and the
// attempt id (lineHead reads both; a head cut inside the id is no head).
func (j *Journal) keyAt(sp span) ([32]byte, bool) {
	var head [160]byte
	if j.f == nil {
		return [32]byte{}, false
	}
	n, _ := j.f.ReadAt(head[:min(len(head), int(sp.n))], sp.off)
	if k, ok := lineKey(head[:n]); ok || n == int(sp.n) || sp.n > MaxLine {
		return k, ok
	}
	// A line in another form than Append writes: its key may be anywhere.
	buf := make([]byte, sp.n)
	if _, err := j.f.ReadAt(buf, sp.off); err != nil {
		return [32]byte{}, false
	}
	return slowKey(buf)
}

// line kinds
const (
	lineReply = iota
	lineFailed
	lineIntent
	lineNoReply
)

type pendingIntent struct {
	key [32]byte
	off int64
	n   int
}

// lineEnd is at if the journal in f has a line ending just before it, else 0.
func lineEnd(f *os.File, at int64) int64 {
	if at <= 0 {
		return 0
	}
	var b [1]byte
	if n, err := f.ReadAt(b[:], at-1); n != 1 || err != nil || b[0] != '\n' {
		return 0
	}
	return at
}

func (j *Journal) load() (map[string]pendingIntent, error) {
	if _, err := j.f.Seek(j.head, io.SeekStart); err != nil {
		return nil, fmt.Errorf("reading the journal: %w", err)
	}
	r := bufio.NewReaderSize(j.f, readBuf)
	pending := map[string]pendingIntent{}
	off := j.head
	for {
		ln, err := readRecordLine(r)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading the journal: %w", err)
		}
		if ln.n == 0 {
			break
		}
		if err == io.EOF {
			// No newline: a write torn by a killed process (or a crash's
			// trailing zeros). It is the only thing ever cut off.
			j.stats.Trimmed = ln.n
			break
		}
		if ln.n > MaxLine {
			j.stats.Oversized++
			j.noteDamaged(off)
		} else {
			j.indexLine(ln, off, pending)
		}
		off += ln.n
	}
	j.size = off
	if j.ro {
		return pending, nil
	}
	if j.stats.Trimmed > 0 {
		if err := j.f.Truncate(off); err != nil {
			return nil, fmt.Errorf("cannot cut the torn last line off the journal: %w", err)
		}
	}
	_, err := j.f.Seek(off, io.SeekStart)
	return pending, err
}

// readBuf is the read buffer, and the longest line read whole on open.
const readBuf = 1 << 20

// recordLine is one journal line as the index needs it: whole when it fits
// the read buffer; otherwise only its head and the top-level markers found
// in it, so a long line costs no memory however long it is.
type recordLine struct {
	whole []byte // nil for a long line
	head  []byte
	marks int
	n     int64
}

const (
	markSent = 1 << iota
	markErr
	markReply
)

var lineMarkers = []struct {
	s []byte
	m int
}{{[]byte(`,"sent":true`), markSent}, {[]byte(`,"e":"`), markErr}, {[]byte(`,"r":{`), markReply}}

func scanMarks(b []byte) (m int) {
	for _, mk := range lineMarkers {
		if bytes.Contains(b, mk.s) {
			m |= mk.m
		}
	}
	return m
}

// readRecordLine reads up to and including the next newline; err is io.EOF
// when the line has none. A whole line is only valid until the next read.
func readRecordLine(r *bufio.Reader) (recordLine, error) {
	chunk, err := r.ReadSlice('\n')
	ln := recordLine{n: int64(len(chunk))}
	if err != bufio.ErrBufferFull {
		ln.whole, ln.head = chunk, chunk
		return ln, err
	}
	ln.head = append([]byte(nil), chunk[:min(len(chunk), 256)]...)
	var tail [16]byte
	nt := 0
	for {
		ln.marks |= scanMarks(chunk)
		// A marker may straddle two chunks.
		edge := append(append([]byte(nil), tail[:nt]...), chunk[:min(len(chunk), 16)]...)
		ln.marks |= scanMarks(edge)
		nt = copy(tail[:], chunk[max(0, len(chunk)-16):])
		if err != bufio.ErrBufferFull {
			return ln, err
		}
		chunk, err = r.ReadSlice('\n')
		ln.n += int64(len(chunk))
	}
}

func (j *Journal) noteDamaged(off int64) {
	if len(j.damaged) < 5 {
		j.damaged = append(j.damaged, off)
	}
}

// indexLine classifies one complete line and indexes it.
func (j *Journal) indexLine(ln recordLine, off int64, pending map[string]pendingIntent) {
	var kind int
	var key []byte
	var id string
	ok := false
	if ln.whole != nil {
		if len(bytes.TrimSpace(ln.whole)) == 0 {
			return // a blank line is no record, and harms nothing
		}
		fast := false
		if key, id, ok = lineHead(ln.whole); ok && json.Valid(ln.whole) {
			kind = lineKind(scanMarks(ln.whole))
			fast = kind != lineNoReply
		}
		if !fast {
			// Not in the form Append writes (a hand edit, another tool),
			// or no record: decoded, so valid JSON in any spacing and
			// key order reads as what it is.
			kind, key, id, ok = slowProbe(ln.whole)
		}
	} else {
		// Too long to hold: judged by its head and markers; a damaged one
		// shows when Lookup decodes it, and is a miss then.
		key, id, ok = lineHead(ln.head)
		kind = lineKind(ln.marks)
	}
	var k [32]byte
	if ok {
		if _, err := hex.Decode(k[:], key); err != nil || len(key) != 64 {
			ok = false
		}
	}
	if !ok {
		j.stats.Damaged++
		j.noteDamaged(off)
		return
	}
	if id != "" {
		if kind == lineIntent {
			pending[id] = pendingIntent{key: k, off: off, n: int(ln.n)}
		} else {
			delete(pending, id)
		}
	}
	switch kind {
	case lineReply:
		// The latest reply wins: a reply written after an unusable one
		// for the same request is the one that replaced it.
		j.index.put(k, span{off, int32(ln.n)})
		j.stats.Replies++
	case lineFailed:
		j.stats.Failed++
	case lineNoReply:
		j.stats.NoReply++
		j.noteDamaged(off)
	}
}

// lineHead reads a line's key and attempt id without decoding it: Append
// writes the key first and the id second.
func lineHead(line []byte) (key []byte, id string, ok bool) {
	const head = `{"k":"`
	if len(line) < len(head)+65 || string(line[:len(head)]) != head || line[len(head)+64] != '"' {
		return nil, "", false
	}
	key = line[len(head) : len(head)+64]
	rest := line[len(head)+65:]
	if bytes.HasPrefix(rest, []byte(`,"i":"`)) {
		end := bytes.IndexByte(rest[6:], '"')
		if end < 0 {
			return nil, "", false
		}
		id = string(rest[6 : 6+end])
	}
	return key, id, true
}

// lineKind reads a record's kind from its top-level markers, which cannot
// occur inside a JSON string (its quotes would be escaped) nor inside a
// response, which has no such fields.
func lineKind(marks int) int {
	switch {
	case marks&markSent != 0:
		return lineIntent
	case marks&markErr != 0:
		return lineFailed
	case marks&markReply != 0:
		return lineReply
	}
	return lineNoReply
}

// slowProbe decodes a line that lineHead could not read (written by hand,
// or by another tool, or damaged).
func slowProbe(line []byte) (kind int, key []byte, id string, ok bool) {
	var p struct {
		K    string          `json:"k"`
		I    string          `json:"i"`
		Sent bool            `json:"sent"`
		E    string          `json:"e"`
		R    json.RawMessage `json:"r"`
	}
	if json.Unmarshal(line, &p) != nil {
		return 0, nil, "", false
	}
	switch {
	case p.Sent:
		kind = lineIntent
	case p.E != "":
		kind = lineFailed
	case len(p.R) > 0 && string(p.R) != "null":
		kind = lineReply
	default:
		kind = lineNoReply
	}
	return kind, []byte(p.K), p.I, true
}

// readHead indexes the start of the journal that opening left unread, on
// the first lookup (j.mu held). The index is rebuilt from the first line to
// the last, so a later reply for a key still replaces an earlier one; the
// head's lines are added to the stats, the rest were counted already.
func (j *Journal) readHead() error {
	if j.head == 0 {
		return nil
	}
	tail, tailDamaged := j.stats, j.damaged
	j.stats, j.damaged = Stats{}, nil
	j.index = newReplyIndex(j.keyAt)
	r := bufio.NewReaderSize(io.NewSectionReader(j.f, 0, j.size), readBuf)
	var off int64
	var headStats Stats
	for off < j.size {
		if off == j.head {
			headStats = j.stats
		}
		ln, err := readRecordLine(r)
		if err != nil && err != io.EOF {
			j.stats, j.damaged = tail, tailDamaged
			return fmt.Errorf("reading the journal %s: %w", j.path, err)
		}
		if ln.n == 0 {
			break
		}
		if ln.n > MaxLine {
			j.stats.Oversized++
			j.noteDamaged(off)
		} else {
			j.indexLine(ln, off, map[string]pendingIntent{})
		}
		off += ln.n
		if err == io.EOF {
			break
		}
	}
	if j.head == j.size {
		headStats = j.stats
	}
	headDamaged := j.damaged
	j.stats = tail
	j.stats.Replies += headStats.Replies
	j.stats.Failed += headStats.Failed
	j.stats.Damaged += headStats.Damaged
	j.stats.NoReply += headStats.NoReply
	j.stats.Oversized += headStats.Oversized
	j.damaged = append(headDamaged[:min(len(headDamaged), 5):min(len(headDamaged), 5)], tailDamaged...)
	j.damaged = j.damaged[:min(len(j.damaged), 5)]
	j.head = 0
	j.index.reserve(j.expect)
	return nil
}

// Expect makes room in the index for n more replies, so the index of a
// large apply is sized once instead of growing by half, each growth holding
// the old table and the new one until the next collection.
func (j *Journal) Expect(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.expect = n
	j.index.reserve(n)
}

// settle writes a failure for every intent left without an outcome, so the
// journal says what became of each attempt and the next open does not count
// them again.
func (j *Journal) settle(pending map[string]pendingIntent) error {
	j.stats.Lost = len(pending)
	for id, p := range pending {
		j.lost[p.key] = true
		rec := Record{Key: hex.EncodeToString(p.key[:]), ID: id, Err: lostInFlight}
		buf := make([]byte, p.n)
		if _, err := j.f.ReadAt(buf, p.off); err == nil {
			var intent Record
			if json.Unmarshal(buf, &intent) == nil {
				rec.Model, rec.Case, rec.Stage, rec.Attempt, rec.Time = intent.Model, intent.Case, intent.Stage, intent.Attempt, intent.Time
			}
		}
		if err := j.Append(&rec); err != nil {
			return err
		}
	}
	return nil
}

func parseKey(key string) ([32]byte, error) {
	var k [32]byte
	if len(key) != 64 {
		return k, fmt.Errorf("bad journal key %q", key)
	}
	_, err := hex.Decode(k[:], []byte(key))
	return k, err
}

// Has reports whether a reply with this key is indexed (it may still prove
// unusable on Lookup).
func (j *Journal) Has(key string) bool {
	k, err := parseKey(key)
	if err != nil {
		return false
	}
	j.mu.Lock()
	if err := j.readHead(); err != nil {
		j.mu.Unlock()
		return false
	}
	sp, ok := j.index.get(k)
	j.mu.Unlock()
	if !ok {
		return false
	}
	got, ok := j.keyAt(sp)
	return ok && got == k
}

// Lookup returns the journaled reply for a key. A record that cannot serve
// (not decodable, no response, a response without an answer) is a miss:
// it is dropped from the index and counted in Stats().Unusable. Only a
// failure to read the file is an error.
func (j *Journal) Lookup(key string) (*Record, bool, error) {
	k, err := parseKey(key)
	if err != nil {
		return nil, false, err
	}
	j.mu.Lock()
	if err := j.readHead(); err != nil {
		j.mu.Unlock()
		return nil, false, err
	}
	sp, ok := j.index.get(k)
	j.mu.Unlock()
	if !ok || j.f == nil {
		return nil, false, nil
	}
	buf := make([]byte, sp.n)
	if _, err := j.f.ReadAt(buf, sp.off); err != nil {
		return nil, false, fmt.Errorf("reading the journal %s: %w", j.path, err)
	}
	if !keyMatches(buf, k) {
		return nil, false, nil // another key's reply, which shares this one's prefix
	}
	rec := Record{Fresh: !j.ro && sp.off >= j.opened}
	if json.Unmarshal(buf, &rec) != nil || rec.Resp == nil || rec.Err != "" || rec.Resp.Problem() != "" {
		j.mu.Lock()
		if j.index.drop(k, sp) {
			j.unusable.Add(1)
		}
		j.mu.Unlock()
		return nil, false, nil
	}
	return &rec, true, nil
}

// Path is the journal file's path.
func (j *Journal) Path() string { return j.path }

// NewAttemptID returns an id unique to this journal's writer, which an
// intent and its outcome share.
func (j *Journal) NewAttemptID() string {
	return j.idBase + strconv.FormatUint(j.idSeq.Add(1), 36)
}

// Append writes one record as one line and, for a usable reply, indexes it.
func (j *Journal) Append(rec *Record) error {
	bp := linePool.Get().(*[]byte)
	line, err := AppendRecord((*bp)[:0], rec)
	defer func() {
		if cap(line) <= 1<<16 {
			*bp = line[:0]
			linePool.Put(bp)
		}
	}()
	if err != nil {
		return err
	}
	var k [32]byte
	index := rec.Err == "" && !rec.Sent && rec.Resp != nil && rec.Resp.Problem() == "" && len(line) <= MaxLine
	if index {
		if k, err = parseKey(rec.Key); err != nil {
			return err
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || j.ro {
		return errors.New("the journal is closed or read-only")
	}
	if j.werr != nil {
		return j.werr
	}
	if j.cond == nil {
		j.cond = sync.NewCond(&j.mu)
	}
	mine := j.batch
	if index {
		j.gathered = append(j.gathered, pendingSpan{k, int64(len(j.gather)), int32(len(line))})
	}
	j.gather = append(j.gather, line...)
	for j.written <= mine {
		if j.writing {
			j.cond.Wait()
			continue
		}
		j.writeBatch()
	}
	if j.werr != nil && j.failedFrom <= mine {
		return j.werr
	}
	return nil
}

// writeBatch writes the lines gathered so far as one write, with j.mu held
// on entry and exit but not during the write; lines that arrive meanwhile
// gather for the next batch. Once a write fails no later batch is written.
func (j *Journal) writeBatch() {
	j.writing = true
	buf, ix, n := j.gather, j.gathered, j.batch
	j.gather, j.gathered = j.spare[:0], j.spareIx[:0]
	j.batch++
	f, base, failed := j.f, j.size, j.werr != nil
	j.mu.Unlock()
	var err error
	if !failed {
		if _, err = f.Write(buf); err == nil && j.fsync {
			if err = f.Sync(); err != nil {
				err = fmt.Errorf("syncing the journal: %w", err)
			}
		} else if err != nil {
			err = fmt.Errorf("writing the journal: %w", err)
		}
	}
	j.mu.Lock()
	switch {
	case failed:
	case err != nil:
		// Part of the batch may be on disk: its lines are unindexed, and
		// a later open skips a torn last line with a warning.
		j.werr, j.failedFrom = err, n
	default:
		for _, p := range ix {
			j.index.put(p.k, span{base + p.off, p.n})
		}
		j.size += int64(len(buf))
	}
	j.spare, j.spareIx = buf[:0], ix[:0]
	j.written = n + 1
	j.writing = false
	j.cond.Broadcast()
}

// WasLost reports, once per key, whether a call with this key was in flight
// when an earlier process died (so sending it now is sending it again).
func (j *Journal) WasLost(key string) bool {
	k, err := parseKey(key)
	if err != nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lost[k] {
		delete(j.lost, k)
		return true
	}
	return false
}

// Size is the journal's length in bytes.
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// Len is the number of distinct replies indexed.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.readHead() != nil {
		return 0
	}
	return j.index.len()
}

// DropIndex frees the index once no more lookups will be made (the cases
// are done), so scoring a large run has its memory back. Appends still
// work; lookups miss.
func (j *Journal) DropIndex() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.index = newReplyIndex(j.keyAt)
	j.head = 0
}

// Stats returns what opening the journal found and lookups found since.
func (j *Journal) Stats() Stats {
	s := j.stats
	s.Unusable = int(j.unusable.Load())
	return s
}

// Warnings describes, one line each, whatever in the journal could not be
// used, and what that costs. None of it advises removing the journal: every
// usable reply in it is still served.
func (j *Journal) Warnings() []string {
	s := j.Stats()
	var out []string
	at := ""
	if len(j.damaged) > 0 {
		at = " (at byte"
		for i, o := range j.damaged {
			if i > 0 {
				at += ","
			}
			at += " " + strconv.FormatInt(o, 10)
		}
		at += ")"
	}
	if n := s.Damaged + s.NoReply + s.Oversized; n > 0 {
		out = append(out, fmt.Sprintf("%s: skipped %d line(s) that are not usable records%s (%d damaged, %d without a reply, %d over %d MiB); the calls they held count as misses and are made again if a case needs them",
			j.path, n, at, s.Damaged, s.NoReply, s.Oversized, MaxLine>>20))
	}
	if s.Trimmed > 0 {
		out = append(out, fmt.Sprintf("%s: cut off a torn last line (%d bytes) left by a process stopped while writing", j.path, s.Trimmed))
	}
	if s.Lost > 0 {
		out = append(out, fmt.Sprintf("%s: %d call(s) were in flight when an earlier apply was killed; their replies were never recorded, so those still needed are sent again", j.path, s.Lost))
	}
	if s.Unusable > 0 {
		out = append(out, fmt.Sprintf("%s: %d journaled repl(ies) had no usable answer (no choices or no content) and were treated as misses", j.path, s.Unusable))
	}
	return out
}

// Close flushes to disk and releases the lock.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.writing {
		j.cond.Wait()
	}
	if j.f == nil {
		return nil
	}
	if j.ro {
		err := j.f.Close()
		j.f = nil
		return err
	}
	err := j.f.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

// Each calls fn for every usable reply, in file order. Lines longer than
// the read buffer are passed over: Each feeds estimates, and must not cost
// the memory of a giant reply.
func (j *Journal) Each(fn func(*Record)) error {
	if j.f == nil {
		return nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(j.f, 0, j.size), readBuf)
	for {
		ln, err := readRecordLine(r)
		if ln.whole != nil && err == nil {
			if _, _, ok := lineHead(ln.whole); !ok || lineKind(scanMarks(ln.whole)) != lineIntent && lineKind(scanMarks(ln.whole)) != lineFailed {
				var rec Record
				if json.Unmarshal(ln.whole, &rec) == nil && rec.Err == "" && !rec.Sent && rec.Resp != nil && rec.Resp.Problem() == "" {
					fn(&rec)
				}
			}
		}
		if err != nil {
			return nil
		}
	}
}
