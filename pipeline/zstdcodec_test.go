package pipeline

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
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
