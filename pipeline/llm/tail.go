package llm

import (
	"math"
	"strconv"
)

// appendTail appends what encoding/json.Marshal writes for the request's
// fields after its messages, up to and including the closing brace,
// without reflection: the cache key and calls.parquet's request_params
// need it for every call. ok is false where encoding/json is the only
// sure reference (provider extras, which hold any value; a number that
// is not finite): the caller encodes by reflection then. key_test.go
// holds the two to the same bytes.
func (r *Request) appendTail(b []byte) (_ []byte, ok bool) {
	if !r.plainTail() {
		return b, false
	}
	if r.Temperature != nil {
		b = append(b, `,"temperature":`...)
		b = AppendJSONFloat(b, *r.Temperature)
	}
	if r.TopP != nil {
		b = append(b, `,"top_p":`...)
		b = AppendJSONFloat(b, *r.TopP)
	}
	if r.MaxTokens != 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(r.MaxTokens), 10)
	}
	if r.N != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(r.N), 10)
	}
	if len(r.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range r.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s, true)
		}
		b = append(b, ']')
	}
	if r.Seed != nil {
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, *r.Seed, 10)
	}
	// omitempty never omits a struct: thinking is always there.
	b = append(b, `,"thinking":{`...)
	t := r.Thinking
	sep := ""
	if t.Enabled {
		b = append(b, `"enabled":true`...)
		sep = ","
	}
	if t.Budget != 0 {
		b = append(b, sep...)
		b = append(b, `"budget":`...)
		b = strconv.AppendInt(b, int64(t.Budget), 10)
		sep = ","
	}
	if t.Effort != "" {
		b = append(b, sep...)
		b = append(b, `"effort":`...)
		b = appendJSONString(b, t.Effort, true)
	}
	b = append(b, '}')
	if r.Logprobs {
		b = append(b, `,"logprobs":true`...)
	}
	if r.Repeat != 0 {
		b = append(b, `,"repeat":`...)
		b = strconv.AppendInt(b, int64(r.Repeat), 10)
	}
	return append(b, '}'), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// AppendJSONFloat writes a finite float64 as encoding/json does: the
// shortest form that reads back, in exponent form only below 1e-6 or from
// 1e21 on, with a two-digit exponent cut to one ("1e-07" is "1e-7"). The
// journal's line encoder uses it too.
func AppendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendParams appends encoding/json's form of the request without its
// messages (messages null): calls.parquet's request_params. ok is false
// when only encoding/json can say it (see appendTail).
func (r *Request) AppendParams(b []byte) (_ []byte, ok bool) {
	if !r.plainTail() {
		return b, false
	}
	b = append(b, `{"model":`...)
	b = appendJSONString(b, r.Model, true)
	b = append(b, `,"messages":null`...)
	return r.appendTail(b)
}

// plainTail says appendTail can write the request's tail.
func (r *Request) plainTail() bool {
	return len(r.Extra) == 0 && (r.Temperature == nil || finite(*r.Temperature)) && (r.TopP == nil || finite(*r.TopP))
}
