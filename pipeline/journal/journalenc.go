package journal

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"sync"

	"github.com/promoral/promoral/pipeline/llm"
)

// AppendRecord appends rec as one journal line: the bytes encoding/json
// writes (HTML left unescaped) and its newline, written field by field
// without reflection, since a line is written for every attempt of every
// call. A record encoding/json would refuse (a latency or log-probability
// that is not a finite number, a time RFC 3339 cannot say) goes through
// encoding/json, which says why. journalenc_test.go holds the two
// encoders to the same bytes.
func AppendRecord(b []byte, rec *Record) ([]byte, error) {
	if !plainRecord(rec) {
		return appendRecordReflect(b, rec)
	}
	start := len(b)
	b = append(b, `{"k":`...)
	b = llm.AppendJSONString(b, rec.Key)
	if rec.ID != "" {
		b = append(b, `,"i":`...)
		b = llm.AppendJSONString(b, rec.ID)
	}
	b = append(b, `,"m":`...)
	b = llm.AppendJSONString(b, rec.Model)
	b = append(b, `,"c":`...)
	b = llm.AppendJSONString(b, rec.Case)
	b = append(b, `,"s":`...)
	b = llm.AppendJSONString(b, rec.Stage)
	b = append(b, `,"a":`...)
	b = strconv.AppendInt(b, int64(rec.Attempt), 10)
	b = append(b, `,"t":"`...)
	// time.Time's own text form, which is what its MarshalJSON quotes.
	b, err := rec.Time.AppendText(b)
	if err != nil {
		return appendRecordReflect(b[:start], rec)
	}
	b = append(b, `","l":`...)
	b = llm.AppendJSONFloat(b, rec.LatencyMS)
	if rec.Sent {
		b = append(b, `,"sent":true`...)
	}
	if r := rec.Resp; r != nil {
		b = append(b, `,"r":{"choices":`...)
		if r.Choices == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i := range r.Choices {
				c := &r.Choices[i]
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"text":`...)
				b = llm.AppendJSONString(b, c.Text)
				b = append(b, `,"finish_reason":`...)
				b = llm.AppendJSONString(b, c.FinishReason)
				if c.Thinking != "" {
					b = append(b, `,"thinking":`...)
					b = llm.AppendJSONString(b, c.Thinking)
				}
				if c.Logprob != nil {
					b = append(b, `,"logprob":`...)
					b = llm.AppendJSONFloat(b, *c.Logprob)
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		u := &r.Usage
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
		if u.CachedPromptTokens != 0 {
			b = append(b, `,"cached_prompt_tokens":`...)
			b = strconv.AppendInt(b, int64(u.CachedPromptTokens), 10)
		}
		if u.ThinkingTokens != 0 {
			b = append(b, `,"thinking_tokens":`...)
			b = strconv.AppendInt(b, int64(u.ThinkingTokens), 10)
		}
		b = append(b, '}')
		if r.ModelVersion != "" {
			b = append(b, `,"model_version":`...)
			b = llm.AppendJSONString(b, r.ModelVersion)
		}
		if r.SafetyInfo != "" {
			b = append(b, `,"safety_info":`...)
			b = llm.AppendJSONString(b, r.SafetyInfo)
		}
		if r.Batch != "" {
			b = append(b, `,"batch":`...)
			b = llm.AppendJSONString(b, r.Batch)
		}
		b = append(b, '}')
	}
	if rec.Err != "" {
		b = append(b, `,"e":`...)
		b = llm.AppendJSONString(b, rec.Err)
	}
	return append(b, '}', '\n'), nil
}

// plainRecord says appendRecord's own encoding covers rec.
func plainRecord(rec *Record) bool {
	if !finite(rec.LatencyMS) {
		return false
	}
	if rec.Resp != nil {
		for i := range rec.Resp.Choices {
			if p := rec.Resp.Choices[i].Logprob; p != nil && !finite(*p) {
				return false
			}
		}
	}
	return true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendRecordReflect is encoding/json's line for rec (the encoder the
// journal always used, and still the reference).
func appendRecordReflect(b []byte, rec *Record) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return b, err
	}
	return buf.Bytes(), nil
}

// linePool recycles the buffers journal lines are encoded into.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}
