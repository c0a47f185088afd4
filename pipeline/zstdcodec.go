package pipeline

import (
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// steadyZstd is arrow's zstd codec with two changes to block encoding
// (EncodeLevel, which the Parquet writers use for pages, at level 1): its
// encoders are made once and kept, and their window is 1 MiB. Arrow keeps
// them in a sync.Pool, which every collection empties, and a new encoder
// allocates the history of zstd's default 8 MiB window: near apply's soft
// memory limit collections come often, and that was 5% of all that apply
// allocated (the quickstart's peak heap: 101 MB with arrow's, 74 MB with
// these). Data pages are about 1 MiB (Parquet's default page size), so the
// smaller window finds the same matches in them and a page of up to 1 MiB
// comes out byte for byte as arrow's encoder writes it. Decoding, error
// reporting and streams are arrow's own.
type steadyZstd struct {
	inner compress.Codec
	mu    sync.Mutex
	encs  map[zstd.EncoderLevel]*zstd.Encoder
}

func init() {
	inner, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic(err) // arrow registers zstd itself: a broken build
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &steadyZstd{inner: inner, encs: map[zstd.EncoderLevel]*zstd.Encoder{}})
}

func (z *steadyZstd) encoder(level int) *zstd.Encoder {
	l := zstd.EncoderLevelFromZstd(level)
	if level == compress.DefaultCompressionLevel {
		l = zstd.SpeedDefault
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	enc := z.encs[l]
	if enc == nil {
		// EncodeAll is safe for concurrent use: the encoder keeps one
		// block encoder per writer that may compress at once.
		enc, _ = zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(2), zstd.WithAllLitEntropyCompression(true),
			zstd.WithWindowSize(1<<20))
		z.encs[l] = enc
	}
	return enc
}

func (z *steadyZstd) EncodeLevel(dst, src []byte, level int) []byte {
	return z.encoder(level).EncodeAll(src, dst[:0])
}

func (z *steadyZstd) Encode(dst, src []byte) []byte { return z.inner.Encode(dst, src) }
func (z *steadyZstd) CompressBound(n int64) int64   { return z.inner.CompressBound(n) }
func (z *steadyZstd) Decode(dst, src []byte) []byte { return z.inner.Decode(dst, src) }
func (z *steadyZstd) NewReader(r io.Reader) io.ReadCloser {
	return z.inner.(compress.StreamingCodec).NewReader(r)
}
func (z *steadyZstd) NewWriter(w io.Writer) io.WriteCloser {
	return z.inner.(compress.StreamingCodec).NewWriter(w)
}

func (z *steadyZstd) NewWriterLevel(w io.Writer, level int) (io.WriteCloser, error) {
	return z.inner.(compress.StreamingCodec).NewWriterLevel(w, level)
}

func (z *steadyZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	return compress.Decode(z.inner, dst, src)
}
