package parquetio

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// The kept encoders write the bytes arrow's pooled ones write for pages within their 1 MiB window, at every
// level the writers may ask for, from several goroutines at once, and
// what they write decodes back.
func TestSteadyZstdWritesArrowsBytes(t *testing.T) {
	got, _ := compress.GetCodec(compress.Codecs.Zstd)
	z, ok := got.(*steadyZstd)
	if !ok {
		t.Fatalf("the registered zstd codec is %T, not the steady one", got)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var inputs [][]byte
	for i := 0; i < 40; i++ {
		var b strings.Builder
		for b.Len() < r.IntN(300_000)+1 {
			fmt.Fprintf(&b, `{"stage":"answer","visit":%d,"out":{"text":"Final Answer: %d"}}`, r.IntN(9), r.IntN(1e6))
		}
		inputs = append(inputs, []byte(b.String()))
	}
	for _, n := range []int{0, 1, 100, 70_000} {
		noise := make([]byte, n)
		for i := range noise {
			noise[i] = byte(r.IntN(256))
		}
		inputs = append(inputs, noise)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(inputs)*4)
	for _, level := range []int{1, 3, compress.DefaultCompressionLevel, 9} {
		for _, in := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				want := z.inner.EncodeLevel(nil, in, level)
				out := z.EncodeLevel(nil, in, level)
				if !bytes.Equal(out, want) {
					errs <- fmt.Sprintf("level %d, %d bytes in: %d bytes out, arrow's encoder %d", level, len(in), len(out), len(want))
					return
				}
				if back, err := compress.Decode(z, nil, out); err != nil || !bytes.Equal(back, in) {
					errs <- fmt.Sprintf("level %d: does not decode back (%v)", level, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// Pages compressed by the kept encoders must decode, with arrow's own zstd decoder,
// to exactly what went in: short, incompressible, repetitive, and pages
// larger than the encoder's window whose repeats lie beyond it.
func TestSteadyZstdRoundTrip(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	pc, ok := c.(*steadyZstd)
	if !ok {
		t.Fatalf("the zstd codec is %T, not the steady one", c)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 3<<20)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	far := append(append(append([]byte(nil), noise[:1<<20]...), noise[2<<20:]...), noise[:1<<20]...)
	inputs := [][]byte{
		{}, []byte("x"), noise[:4096], noise,
		[]byte(strings.Repeat(`{"reply":"Final Answer: Acceptable","confidence":0.9}`, 50000)),
		far,
	}
	for i, in := range inputs {
		for _, enc := range [][]byte{pc.Encode(nil, in), pc.EncodeLevel(nil, in, 1), pc.EncodeLevel(nil, in, compress.DefaultCompressionLevel)} {
			out, err := compress.Decode(pc.inner, nil, enc)
			if err != nil {
				t.Fatalf("input %d: %v", i, err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("input %d: %d bytes in, %d different bytes out", i, len(in), len(out))
			}
		}
	}
}

// One writer compressing page after page uses one encoder, whatever the
// level; writers compressing at once get one each, kept for later.
func TestSteadyZstdOneEncoderPerWriter(t *testing.T) {
	inner, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	z := &steadyZstd{inner: inner.(*steadyZstd).inner, idle: map[zstd.EncoderLevel][]*zstd.Encoder{}}
	page := []byte(strings.Repeat(`{"reply":"Final Answer: Acceptable"}`, 3000))
	for range 20 {
		z.EncodeLevel(nil, page, 1)
	}
	if n := len(z.idle[zstd.SpeedFastest]); n != 1 {
		t.Fatalf("one writer, 20 pages: %d encoders kept, want 1", n)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 20 {
				z.EncodeLevel(nil, page, 1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := len(z.idle[zstd.SpeedFastest]); n < 1 || n > 3 {
		t.Fatalf("three writers: %d encoders kept, want 1 to 3", n)
	}
}

// The kept encoders' smaller history writes the bytes the full one writes,
// for pages past the window too (the history then moves down as it goes).
func TestSteadyZstdLowMemorySameBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("the narrator took the money and lied about it to a friend Final Answer: Acceptable Unacceptable Confidence: 0.9")
	var inputs [][]byte
	for _, size := range []int{100_000, 1 << 20, 1_400_000, 2_500_000} {
		var b strings.Builder
		for b.Len() < size {
			if r.IntN(50) == 0 && b.Len() > 300_000 {
				// a repeat from far back, beyond the window for the largest
				s := b.String()
				from := r.IntN(len(s) - 2000)
				b.WriteString(s[from : from+2000])
			}
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		inputs = append(inputs, []byte(b.String()))
	}
	for _, l := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression} {
		low, _ := zstd.NewWriter(nil, steadyOptions(l, true)...)
		full, _ := zstd.NewWriter(nil, steadyOptions(l, false)...)
		for _, in := range inputs {
			a, b := low.EncodeAll(in, nil), full.EncodeAll(in, nil)
			if !bytes.Equal(a, b) {
				t.Errorf("level %v, %d bytes in: %d bytes with the smaller history, %d with the full one", l, len(in), len(a), len(b))
			}
		}
	}
}
