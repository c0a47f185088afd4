package pipeline

import (
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// steadyZstd is arrow's zstd codec with one change: the encoders of
// EncodeLevel (which the Parquet writers use, at level 1) are made once and
// kept. Arrow keeps them in a sync.Pool, which every collection empties,
// and a new encoder allocates its history window (a few MB): near apply's
// soft memory limit collections come often, and that was 5% of all that
// apply allocated. The encoders take the same options as arrow's, so the
// bytes written are the same; decoding and streams are arrow's own.
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
			zstd.WithEncoderConcurrency(2), zstd.WithAllLitEntropyCompression(true))
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
