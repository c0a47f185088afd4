package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// Attempt is one provider call, reported twice: once as it is about to be
// sent (Sending) and once with its outcome.
type Attempt struct {
	N       int // 1-based attempt number within the request
	Start   time.Time
	Latency time.Duration
	Err     error
	Resp    *llm.Response
	// Sending marks the report made just before the request goes out;
	// Latency, Err and Resp are empty then. The engine journals an intent
	// then, so after a kill -9 the next apply knows which calls were in
	// flight. A Doer that cannot tell (a batch job already submitted) may
	// skip it.
	Sending bool
}

// Doer sends requests to one model: retries, rate limits and concurrency
// live behind it. The engine calls it only on a journal miss. ctx governs
// waiting and retrying; an attempt already sent runs under
// llm.CallContext(ctx), which outlives an interruption by a grace period so
// paid calls are journaled.
type Doer interface {
	Do(ctx context.Context, req *llm.Request, onAttempt func(Attempt)) (*llm.Response, error)
}

var _ Doer = (*Transport)(nil)

// Waver is a Doer that answers in waves, as a provider's batch jobs do: it
// holds the requests it is given until Flush, and the engine calls Flush
// once no case that could add to the wave is still running (each is
// waiting on some Waver, or finished). The engine stays one code path: a
// case never knows whether its reply came live, from the journal or from a
// batch job.
type Waver interface {
	Doer
	// CasesInFlight is how many cases of the Waver's own model the engine
	// keeps in flight, and so the most requests of that model in one wave.
	CasesInFlight() int
	// Flush sends the requests held so far. It must not block.
	Flush()
	// Finish is called once no case of this run can call the Waver any
	// more. keep journals a reply no case asked for (a job an earlier run
	// left in flight), unless the journal already holds its key.
	Finish(keep func(key string, a Attempt))
}

// WaveCall is the engine's side of one call it sends to a Waver, carried
// by the call's context (WithWaveCall); the Waver signals it through
// Waiting and Wake.
type WaveCall interface {
	// Waiting: the Waver now holds the call's request; the case waits for
	// a wave.
	Waiting()
	// Wake: the case is about to go on.
	Wake()
}

type waveCallKey struct{}

// WithWaveCall returns ctx carrying c, for the Waver the call goes to.
func WithWaveCall(ctx context.Context, c WaveCall) context.Context {
	return context.WithValue(ctx, waveCallKey{}, c)
}

// Waiting tells the engine that the Waver now holds the request of the call
// ctx belongs to: the case waits for a wave.
func Waiting(ctx context.Context) {
	if c, ok := ctx.Value(waveCallKey{}).(WaveCall); ok {
		c.Waiting()
	}
}

// Wake tells the engine that the case whose call ctx belongs to is about
// to go on. A Waver calls it for every case a job answers before it lets
// any of them go on: released one by one, the first to ask again would
// find the others still counted as waiting and send a wave of one.
func Wake(ctx context.Context) {
	if c, ok := ctx.Value(waveCallKey{}).(WaveCall); ok {
		c.Wake()
	}
}

// CacheKey is the journal key of a request to a model: a hash of the
// model's provider identity (spec.Model's Identity), a zero byte and the
// request's canonical form.
func CacheKey(identity string, req *llm.Request) string {
	key, _ := cacheKey(identity, req, false)
	return key
}

// CacheKeyMessages is CacheKey and the request's messages as
// llm.MessagesJSON gives them, taken from the same canonical form where it
// is the same text.
func CacheKeyMessages(identity string, req *llm.Request) (key, messages string) {
	return cacheKey(identity, req, true)
}

func cacheKey(identity string, req *llm.Request, messages bool) (key, msgs string) {
	bp := keyScratch.Get().(*[]byte)
	b := append((*bp)[:0], identity...)
	b = append(b, 0)
	b, from, to := req.AppendCanonicalSpan(b)
	sum := sha256.Sum256(b)
	key = hex.EncodeToString(sum[:])
	if messages {
		msgs = req.MessagesJSONFrom(b[from:to])
	}
	if cap(b) <= 1<<20 {
		*bp = b
		keyScratch.Put(bp)
	}
	return key, msgs
}

var keyScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}
