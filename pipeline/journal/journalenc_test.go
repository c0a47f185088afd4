package journal

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// oddStrings are strings whose JSON form needs care: escapes, control
// characters, HTML (left as it is), invalid UTF-8, the two line separators
// JavaScript cannot hold, and plain text around them.
var oddStrings = []string{
	"", "plain", `quote " and \ backslash`, "line\nbreak\r\ttab\b\f", "\x00\x01\x1f\x7f",
	"<b>&amp;</b>", "bad \xff utf8 \xc3", "sep \u2028 and \u2029", "émoji 🙂 ünïcode",
	"Final Answer: Unacceptable\nConfidence: 0.9", strings.Repeat("long ", 300),
}

var oddFloats = []float64{0, 1, -1, 0.5, 12.345, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 123456789e15,
	math.SmallestNonzeroFloat64, math.MaxFloat64, -0.000001234, 3.0000000000000004, 1000.125}

func randomRecord(r *rand.Rand) *Record {
	str := func() string {
		if r.IntN(3) == 0 {
			return oddStrings[r.IntN(len(oddStrings))]
		}
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	flt := func() float64 {
		if r.IntN(2) == 0 {
			return oddFloats[r.IntN(len(oddFloats))]
		}
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	}
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", -7*3600)}
	rec := &Record{
		Key: hex.EncodeToString([]byte(str())), Model: str(), Case: str(), Stage: str(),
		Attempt: r.IntN(5) - 1, LatencyMS: flt(),
		Time: time.Unix(r.Int64N(1<<34)-1<<30, r.Int64N(1e9)).In(zones[r.IntN(len(zones))]),
	}
	if r.IntN(4) == 0 {
		rec.Time = rec.Time.Truncate(time.Second)
	}
	if r.IntN(2) == 0 {
		rec.ID = str()
	}
	switch r.IntN(4) {
	case 0:
		rec.Sent = true
	case 1:
		rec.Err = str()
	default:
		resp := &llm.Response{ModelVersion: str(), Usage: llm.Usage{PromptTokens: r.IntN(1000), CompletionTokens: r.IntN(1000)}}
		if r.IntN(2) == 0 {
			resp.SafetyInfo, resp.Batch = str(), str()
			resp.Usage.CachedPromptTokens, resp.Usage.ThinkingTokens = r.IntN(100), r.IntN(100)
		}
		if n := r.IntN(4); n > 0 || r.IntN(2) == 0 {
			resp.Choices = make([]llm.Choice, n)
			for i := range resp.Choices {
				c := &resp.Choices[i]
				c.Text, c.FinishReason = str(), str()
				if r.IntN(2) == 0 {
					c.Thinking = str()
				}
				if r.IntN(2) == 0 {
					f := flt()
					c.Logprob = &f
				}
			}
		}
		rec.Resp = resp
	}
	return rec
}

// TestJournalLineEncodersAgree holds the journal's own encoder to the
// bytes encoding/json writes for the same record, over records of every
// kind with awkward strings, floats, times and empty parts.
func TestJournalLineEncodersAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 1))
	for i := 0; i < 20000; i++ {
		rec := randomRecord(r)
		want, werr := appendRecordReflect(nil, rec)
		got, gerr := AppendRecord([]byte("prefix"), rec)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("record %+v: encoding/json error %v, ours %v", rec, werr, gerr)
		}
		if werr == nil && !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("record %d differs:\n ours %s\n json %s", i, got[len("prefix"):], want)
		}
	}
}

// Records encoding/json refuses are refused the same way, not written.
func TestJournalLineEncoderRefusesWhatJSONRefuses(t *testing.T) {
	nan := math.NaN()
	for _, rec := range []*Record{
		{Key: "k", LatencyMS: math.Inf(1)},
		{Key: "k", Resp: &llm.Response{Choices: []llm.Choice{{Text: "x", Logprob: &nan}}}},
		{Key: "k", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Key: "k", Time: time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))},
	} {
		if _, err := AppendRecord(nil, rec); err == nil {
			t.Errorf("record %+v was encoded; encoding/json refuses it", rec)
		}
	}
}

func FuzzJournalLineEncoders(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s, s, 1.5, int64(1700000000), 2)
	}
	f.Fuzz(func(t *testing.T, text, model string, lat float64, sec int64, attempt int) {
		lp := -lat
		rec := &Record{Key: "ab", ID: text, Model: model, Case: text, Stage: model, Attempt: attempt,
			Time: time.Unix(sec, int64(attempt)), LatencyMS: lat,
			Resp: &llm.Response{Choices: []llm.Choice{{Text: text, FinishReason: model, Logprob: &lp}}, ModelVersion: text}}
		want, werr := appendRecordReflect(nil, rec)
		got, gerr := AppendRecord(nil, rec)
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("ours %q (%v), json %q (%v)", got, gerr, want, werr)
		}
	})
}

// A journal written line by line by encoding/json (every journal before
// the encoder of its own) opens, serves its replies and takes new lines.
func TestJournalWrittenByTheOldEncoderReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	var old bytes.Buffer
	r := rand.New(rand.NewPCG(7, 7))
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprintf("%064x", i+1)
		rec := randomRecord(r)
		rec.Key, rec.ID, rec.Sent, rec.Err = keys[i], "", false, ""
		rec.LatencyMS = float64(i) / 7
		rec.Resp = &llm.Response{Choices: []llm.Choice{{Text: oddStrings[i%len(oddStrings)] + "!", FinishReason: "stop"}}, Usage: llm.Usage{PromptTokens: i}}
		line, err := appendRecordReflect(nil, rec)
		if err != nil {
			t.Fatal(err)
		}
		old.Write(line)
	}
	if err := os.WriteFile(path, old.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := OpenFrom(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := j.Stats(); s.Replies != len(keys) || s.Damaged+s.NoReply+s.Oversized != 0 {
		t.Fatalf("stats %+v, want %d replies and nothing skipped", s, len(keys))
	}
	for i, k := range keys {
		rec, ok, err := j.Lookup(k)
		if err != nil || !ok {
			t.Fatalf("key %d: ok %v, err %v", i, ok, err)
		}
		if want := oddStrings[i%len(oddStrings)] + "!"; rec.Resp.Text() != strings.ToValidUTF8(want, "\uFFFD") || rec.Resp.Usage.PromptTokens != i {
			t.Fatalf("key %d: reply %q, %d prompt tokens", i, rec.Resp.Text(), rec.Resp.Usage.PromptTokens)
		}
	}
	// A new line goes after the old ones, in the same form.
	add := &Record{Key: fmt.Sprintf("%064x", 999), Model: "m", Time: time.Unix(1, 0).UTC(), Resp: &llm.Response{Choices: []llm.Choice{{Text: "new", FinishReason: "stop"}}}}
	if err := j.Append(add); err != nil {
		t.Fatal(err)
	}
	j.Close()
	data, _ := os.ReadFile(path)
	want, _ := appendRecordReflect(old.Bytes(), add)
	if !bytes.Equal(data, want) {
		t.Fatalf("the journal after one append is not the old lines and encoding/json's line:\n%s", data[len(old.Bytes()):])
	}
}

// BenchmarkJournalLine encodes a reply record of the scale study's shape
// (a 90-byte reply) with the journal's encoder and with encoding/json.
func BenchmarkJournalLine(b *testing.B) {
	lp := -0.25
	rec := &Record{Key: strings.Repeat("ab", 32), ID: "1a2b3c4d.k2", Model: "bot01", Case: "bot01/zero_shot/ethics/item-000123", Stage: "answer",
		Attempt: 1, Time: time.Date(2026, 11, 23, 19, 0, 0, 123456789, time.UTC), LatencyMS: 0.042,
		Resp: &llm.Response{Choices: []llm.Choice{{Text: "The narrator harms someone.\nConfidence: 0.7\nFinal Answer: Unacceptable", FinishReason: "stop", Logprob: &lp}},
			Usage: llm.Usage{PromptTokens: 180, CompletionTokens: 20}}}
	for _, enc := range []struct {
		name string
		f    func([]byte, *Record) ([]byte, error)
	}{{"own", AppendRecord}, {"encoding_json", appendRecordReflect}} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for i := 0; i < b.N; i++ {
				buf, _ = enc.f(buf[:0], rec)
			}
		})
	}
}
