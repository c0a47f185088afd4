package pipeline

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

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
