package view

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// textIndex is what the view learns from the run's text after it opens:
// which row groups of calls.parquet hold each case's calls, a short excerpt
// of each item, and a word index over item text, outputs, judge outputs and
// replies for search. The list works before it is ready; search and the
// excerpts appear when it is.
type textIndex struct {
	r         *Run
	callsDone chan struct{}
	done      chan struct{}
	quit      chan struct{}
	stopOnce  sync.Once
	progress  atomic.Int64 // work units done
	total     atomic.Int64
	err       error
	callsErr  error
	elapsed   time.Duration

	callRG   []uint16 // first calls.parquet row group of each case; noGroup: none
	callMore map[int32][]uint16
	excerpt  []string

	terms []string // sorted
	post  [][]byte // per term: case indexes, delta + uvarint encoded

	cmu   sync.Mutex
	cache map[string][]uint64
}

const noGroup = 0xFFFF

func newTextIndex(r *Run) *textIndex {
	return &textIndex{r: r, callsDone: make(chan struct{}), done: make(chan struct{}), quit: make(chan struct{}), cache: map[string][]uint64{}}
}

func (x *textIndex) stop() { x.stopOnce.Do(func() { close(x.quit) }) }

func (x *textIndex) stopped() bool {
	select {
	case <-x.quit:
		return true
	default:
		return false
	}
}

// ready reports whether search is available, and the share done.
func (x *textIndex) ready() (bool, float64) {
	select {
	case <-x.done:
		return true, 1
	default:
	}
	t := x.total.Load()
	if t == 0 {
		return false, 0
	}
	return false, float64(x.progress.Load()) / float64(t)
}

// wait blocks until the index is built (or stopped).
func (x *textIndex) wait() { <-x.done }

func (x *textIndex) build() {
	start := time.Now()
	defer func() {
		x.elapsed = time.Since(start)
		close(x.done)
	}()
	r := x.r
	callsPath := filepath.Join(r.Dir, "calls.parquet")
	var calls *pqFile
	if r.hasCalls {
		var err error
		if calls, err = openPQ(callsPath); err != nil {
			x.callsErr = err
		} else {
			defer calls.Close()
		}
	}
	res, err := openPQ(filepath.Join(r.Dir, "results.parquet"))
	if err != nil {
		x.err = err
		close(x.callsDone)
		return
	}
	defer res.Close()
	work := int64(res.groups())
	if calls != nil {
		work += 2 * int64(calls.groups())
	}
	x.total.Store(work)

	x.callRG = make([]uint16, r.n)
	for i := range x.callRG {
		x.callRG[i] = noGroup
	}
	x.callMore = map[int32][]uint16{}
	if calls != nil {
		x.callsErr = x.locateCalls(calls)
	}
	close(x.callsDone)

	x.excerpt = make([]string, r.n)
	// Row groups are shared out to a few workers, each with its own word
	// table and file readers; the tables are merged at the end.
	type unit struct {
		calls bool
		g     int
	}
	var units []unit
	for g := 0; g < res.groups(); g++ {
		units = append(units, unit{false, g})
	}
	if calls != nil {
		for g := 0; g < calls.groups(); g++ {
			units = append(units, unit{true, g})
		}
	}
	next := make(chan unit, len(units))
	for _, u := range units {
		next <- u
	}
	close(next)
	workers := min(runtime.GOMAXPROCS(0), 4)
	accs := make([]*postings, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		accs[w] = newPostings()
		wg.Add(1)
		go func(acc *postings, errp *error) {
			defer wg.Done()
			files := map[bool]*pqFile{}
			defer func() {
				for _, f := range files {
					f.Close()
				}
			}()
			var buf []byte
			for u := range next {
				if x.stopped() || *errp != nil {
					continue
				}
				f := files[u.calls]
				if f == nil {
					name := "results.parquet"
					if u.calls {
						name = "calls.parquet"
					}
					if f, *errp = openPQ(filepath.Join(r.Dir, name)); *errp != nil {
						continue
					}
					files[u.calls] = f
				}
				if u.calls {
					*errp = x.indexCalls(f, u.g, acc)
				} else {
					buf, *errp = x.indexResults(f, u.g, acc, buf)
				}
				x.progress.Add(1)
			}
		}(accs[w], &errs[w])
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			x.err = err
			return
		}
	}
	for _, a := range accs[1:] {
		accs[0].merge(a)
	}
	x.terms, x.post = accs[0].finish()
}

// indexResults reads the item, outputs and judge of one row group of
// results.parquet: their words, and each item's excerpt.
func (x *textIndex) indexResults(p *pqFile, g int, acc *postings, buf []byte) ([]byte, error) {
	b, err := p.read(g, "item", "outputs", "judge")
	if err != nil {
		return buf, err
	}
	defer b.release()
	for k := 0; k < b.n; k++ {
		i := uint32(p.start[g] + k)
		best, bestScore := "", -1
		for _, col := range []string{"item", "outputs", "judge"} {
			raw, ok := b.strRef(col, k)
			if !ok {
				continue
			}
			item := col == "item"
			buf = jsonStrings(raw, buf, func(key, val string) {
				acc.addText(val, i)
				if item {
					if sc := excerptScore(key, val); sc > bestScore {
						best, bestScore = val, sc
					}
				}
			})
		}
		x.excerpt[i] = excerptOf(best)
	}
	return buf, nil
}

// indexCalls reads the replies of one row group of calls.parquet.
func (x *textIndex) indexCalls(p *pqFile, g int, acc *postings) error {
	b, err := p.read(g, "case_id", "response_text")
	if err != nil {
		return err
	}
	defer b.release()
	for k := 0; k < b.n; k++ {
		id, _ := b.strRef("case_id", k)
		i, ok := x.r.byID[id]
		if !ok {
			continue
		}
		if t, ok := b.strRef("response_text", k); ok {
			acc.addText(t, uint32(i))
		}
	}
	return nil
}

// locateCalls notes in which row groups each case's calls are.
func (x *textIndex) locateCalls(calls *pqFile) error {
	r := x.r
	if calls.groups() >= noGroup {
		return fmt.Errorf("%s has %d row groups; the view reads at most %d", calls.path, calls.groups(), noGroup-1)
	}
	for g := 0; g < calls.groups() && !x.stopped(); g++ {
		b, err := calls.read(g, "case_id")
		if err != nil {
			return err
		}
		for k := 0; k < b.n; k++ {
			id, _ := b.strRef("case_id", k)
			i, ok := r.byID[id]
			if !ok {
				continue
			}
			gg := uint16(g)
			switch {
			case x.callRG[i] == noGroup:
				x.callRG[i] = gg
			case x.callRG[i] == gg:
			default:
				if m := x.callMore[i]; len(m) == 0 || m[len(m)-1] != gg {
					x.callMore[i] = append(m, gg)
				}
			}
		}
		b.release()
		x.progress.Add(1)
	}
	return nil
}

// callGroups lists the calls.parquet row groups holding case i's calls.
func (x *textIndex) callGroups(i int) []int {
	<-x.callsDone
	if x.callRG == nil || x.callRG[i] == noGroup {
		return nil
	}
	out := []int{int(x.callRG[i])}
	for _, g := range x.callMore[int32(i)] {
		out = append(out, int(g))
	}
	sort.Ints(out)
	return slices.Compact(out)
}

func (x *textIndex) excerptOf(i int) string {
	select {
	case <-x.done:
		if x.excerpt != nil {
			return x.excerpt[i]
		}
	default:
	}
	return ""
}

// excerptScore ranks an item field as the item's excerpt: the fields that
// usually hold its text first, then prose (words with spaces) over ids and
// numbers, then the longer.
func excerptScore(key, val string) int {
	sc := min(len(val), 400)
	if strings.Contains(strings.TrimSpace(val), " ") {
		sc += 1000
	}
	switch strings.ToLower(key) {
	case "text", "scenario", "prompt", "question", "input", "situation", "dilemma", "story", "behavior", "action", "context":
		sc += 10000
	}
	return sc
}

func excerptOf(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 160
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ---- the word index ----

// postings collects, per word, the cases it occurs in. Words are looked
// up in an open-addressing table keyed by a hash computed while the word
// is read, which costs a third of a Go map lookup on this hot path.
type postings struct {
	slots []int32 // index+1 into words; 0 = empty
	words []wordIDs
	tok   []byte
}

type wordIDs struct {
	w   string
	h   uint64
	ids []uint32
}

func newPostings() *postings { return &postings{slots: make([]int32, 1<<14)} }

// Words shorter than minWord are not indexed; longer than maxWord are
// ids, hashes or base64, not words anyone types.
const minWord, maxWord = 2, 40

func (p *postings) addText(s string, id uint32) {
	eachWord(s, &p.tok, func(w []byte) {
		if len(w) < minWord || len(w) > maxWord {
			return
		}
		e := p.entry(w)
		if n := len(e.ids); n == 0 || e.ids[n-1] != id {
			e.ids = append(e.ids, id)
		}
	})
}

func hashWord(w []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range w {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func (p *postings) entry(w []byte) *wordIDs {
	h := hashWord(w)
	mask := uint64(len(p.slots) - 1)
	for k := h & mask; ; k = (k + 1) & mask {
		s := p.slots[k]
		if s == 0 {
			if 2*(len(p.words)+1) > len(p.slots) {
				p.grow()
				return p.entry(w)
			}
			p.words = append(p.words, wordIDs{w: string(w), h: h})
			p.slots[k] = int32(len(p.words))
			return &p.words[len(p.words)-1]
		}
		if e := &p.words[s-1]; e.h == h && e.w == string(w) {
			return e
		}
	}
}

func (p *postings) grow() {
	p.slots = make([]int32, 2*len(p.slots))
	mask := uint64(len(p.slots) - 1)
	for n, e := range p.words {
		k := e.h & mask
		for p.slots[k] != 0 {
			k = (k + 1) & mask
		}
		p.slots[k] = int32(n + 1)
	}
}

// merge adds another worker's lists.
func (p *postings) merge(o *postings) {
	for _, e := range o.words {
		d := p.entry([]byte(e.w))
		d.ids = append(d.ids, e.ids...)
	}
}

// finish sorts the words and encodes each list as sorted, distinct case
// indexes in delta uvarint form (a few bytes per entry).
func (p *postings) finish() ([]string, [][]byte) {
	slices.SortFunc(p.words, func(a, b wordIDs) int { return strings.Compare(a.w, b.w) })
	terms := make([]string, len(p.words))
	post := make([][]byte, len(p.words))
	var tmp [binary.MaxVarintLen32]byte
	for k := range p.words {
		terms[k] = p.words[k].w
		ids := p.words[k].ids
		slices.Sort(ids)
		ids = slices.Compact(ids)
		enc := make([]byte, 0, len(ids)+4)
		prev := uint32(0)
		for j, id := range ids {
			d := id - prev
			if j == 0 {
				d = id
			}
			n := binary.PutUvarint(tmp[:], uint64(d))
			enc = append(enc, tmp[:n]...)
			prev = id
		}
		post[k] = enc
		p.words[k].ids = nil
	}
	p.words, p.slots = nil, nil
	return terms, post
}

// eachWord calls fn with each word of s, lower-cased: runs of letters and
// digits. buf is reused between calls.
func eachWord(s string, buf *[]byte, fn func([]byte)) {
	w := (*buf)[:0]
	flush := func() {
		if len(w) > 0 {
			fn(w)
			w = w[:0]
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				w = append(w, c)
			case 'A' <= c && c <= 'Z':
				w = append(w, c+('a'-'A'))
			default:
				flush()
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			w = utf8.AppendRune(w, unicode.ToLower(r))
		} else {
			flush()
		}
	}
	flush()
	*buf = w
}

// search returns the cases holding every word of q (each word of the query
// matches as the start of a word: "refus" finds "refused"), as a bitset;
// nil when q has no word.
func (x *textIndex) search(q string) []uint64 {
	var words []string
	var buf []byte
	eachWord(q, &buf, func(w []byte) { words = append(words, string(w)) })
	if len(words) == 0 {
		return nil
	}
	key := strings.Join(words, " ")
	x.cmu.Lock()
	if bs, ok := x.cache[key]; ok {
		x.cmu.Unlock()
		return bs
	}
	x.cmu.Unlock()
	n := x.r.n
	var out []uint64
	for _, w := range words {
		bs := make([]uint64, (n+63)/64)
		lo := sort.SearchStrings(x.terms, w)
		for k := lo; k < len(x.terms) && strings.HasPrefix(x.terms[k], w); k++ {
			decode(x.post[k], func(id uint32) { bs[id/64] |= 1 << (id % 64) })
		}
		if out == nil {
			out = bs
		} else {
			for j := range out {
				out[j] &= bs[j]
			}
		}
	}
	x.cmu.Lock()
	if len(x.cache) > 32 {
		clear(x.cache)
	}
	x.cache[key] = out
	x.cmu.Unlock()
	return out
}

func decode(enc []byte, fn func(uint32)) {
	id := uint32(0)
	for first := true; len(enc) > 0; first = false {
		d, n := binary.Uvarint(enc)
		enc = enc[n:]
		if first {
			id = uint32(d)
		} else {
			id += uint32(d)
		}
		fn(id)
	}
}

// jsonStrings calls fn with every string value in a JSON document and the
// key it sits under (keys themselves are not values), decoding escapes.
// Numbers and booleans are passed as text too. It never fails: text that
// is not JSON is passed whole as one value.
func jsonStrings(raw string, buf []byte, fn func(key, val string)) []byte {
	t := strings.TrimSpace(raw)
	if t == "" || (t[0] != '{' && t[0] != '[' && t[0] != '"') {
		fn("", raw)
		return buf
	}
	key := ""
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"':
			j := i + 1
			buf = buf[:0]
			for j < len(raw) && raw[j] != '"' {
				if raw[j] == '\\' && j+1 < len(raw) {
					j++
					switch raw[j] {
					case 'n', 't', 'r', 'b', 'f':
						buf = append(buf, ' ')
					case 'u':
						if j+4 < len(raw) {
							if v, err := strconv.ParseUint(raw[j+1:j+5], 16, 32); err == nil {
								buf = utf8.AppendRune(buf, rune(v))
							}
							j += 4
						}
					default:
						buf = append(buf, raw[j])
					}
					j++
					continue
				}
				buf = append(buf, raw[j])
				j++
			}
			k := j + 1
			for k < len(raw) && (raw[k] == ' ' || raw[k] == '\n' || raw[k] == '\t' || raw[k] == '\r') {
				k++
			}
			if k < len(raw) && raw[k] == ':' {
				key = string(buf)
			} else {
				fn(key, string(buf))
			}
			i = j + 1
		case c == '-' || '0' <= c && c <= '9' || c == 't' || c == 'f':
			j := i
			for j < len(raw) && !strings.ContainsRune(",}] \n\t\r", rune(raw[j])) {
				j++
			}
			fn(key, raw[i:j])
			i = j
		default:
			i++
		}
	}
	return buf
}
