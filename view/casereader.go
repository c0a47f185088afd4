package view

import "path/filepath"

// caseReader reads cases through files it keeps open and the last row
// groups it read, so that reading many cases in order (a bundle writes
// every case) reads each row group once, not once per case.
type caseReader struct {
	r           *Run
	res, callsF *pqFile
	err         error
	cols        []string // every column of results.parquet
	resB        map[int]*batch
	callB       map[int]*batch
}

// keepGroups bounds the row groups a reader holds per file.
const keepGroups = 4

func (r *Run) newCaseReader() *caseReader {
	return &caseReader{r: r, resB: map[int]*batch{}, callB: map[int]*batch{}}
}

func (cr *caseReader) results() (*pqFile, error) {
	if cr.res == nil && cr.err == nil {
		cr.res, cr.err = openPQ(filepath.Join(cr.r.Dir, "results.parquet"))
		if cr.err == nil {
			cr.cols = cr.res.columns()
		}
	}
	return cr.res, cr.err
}

// group is every column of results.parquet's row group g.
func (cr *caseReader) group(g int) (*batch, error) {
	p, err := cr.results()
	if err != nil {
		return nil, err
	}
	return cached(cr.resB, g, func() (*batch, error) { return p.read(g, cr.cols...) })
}

// callGroup is the columns the case page shows of calls.parquet's row
// group g.
func (cr *caseReader) callGroup(g int) (*batch, error) {
	if cr.callsF == nil {
		p, err := openPQ(filepath.Join(cr.r.Dir, "calls.parquet"))
		if err != nil {
			return nil, err
		}
		cr.callsF = p
	}
	return cached(cr.callB, g, func() (*batch, error) {
		return cr.callsF.read(g, "case_id", "stage", "attempt", "request_hash", "request_messages", "request_params", "response_text",
			"response_choices", "finish_reason", "prompt_tokens", "completion_tokens", "cached_prompt_tokens", "thinking_tokens",
			"latency_ms", "cached", "error", "model_version", "cost_usd", "time", "final", "attempts")
	})
}

// cached reads row group g into m, first releasing the lowest group held
// when m is full (cases are read in order).
func cached(m map[int]*batch, g int, read func() (*batch, error)) (*batch, error) {
	if b, ok := m[g]; ok {
		return b, nil
	}
	if len(m) >= keepGroups {
		low := -1
		for k := range m {
			if low < 0 || k < low {
				low = k
			}
		}
		m[low].release()
		delete(m, low)
	}
	b, err := read()
	if err != nil {
		return nil, err
	}
	m[g] = b
	return b, nil
}

func (cr *caseReader) close() {
	for _, m := range []map[int]*batch{cr.resB, cr.callB} {
		for _, b := range m {
			b.release()
		}
	}
	if cr.res != nil {
		cr.res.Close()
	}
	if cr.callsF != nil {
		cr.callsF.Close()
	}
}
