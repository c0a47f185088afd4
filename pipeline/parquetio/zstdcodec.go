package parquetio

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
// memory limit collections come often, and remaking encoders would be a
// large share of what apply allocates (with arrow's pool the quickstart's
// peak heap is about a third higher). Data pages are about 1 MiB (Parquet's
// default page size), so the smaller window finds the same matches in them
// and a page of up to 1 MiB comes out byte for byte as arrow's encoder
// writes it. Decoding, error reporting and streams are arrow's own.
//
// An encoder is made when a page finds none idle, so there are as many as
// pages were ever compressed at once: one while a single writer writes (a
// zstd encoder that compresses for two at once keeps two histories, about
// 2.5 MB each, and uses them in turn, so one writer would keep both live).
// Each keeps the lower-memory history (the window and one block, 1.1 MiB, not
// twice the window): a page longer than that moves the history down as it
// goes, which changes where it is kept, not what it matches, so the bytes
// are the same (TestSteadyZstdLowMemorySameBytes).
type steadyZstd struct {
	inner compress.Codec
	mu    sync.Mutex
	idle  map[zstd.EncoderLevel][]*zstd.Encoder
}

func init() {
	inner, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic(err) // arrow registers zstd itself: a broken build
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &steadyZstd{inner: inner, idle: map[zstd.EncoderLevel][]*zstd.Encoder{}})
}

// take lends an idle encoder of the level, or makes one.
func (z *steadyZstd) take(l zstd.EncoderLevel) *zstd.Encoder {
	z.mu.Lock()
	defer z.mu.Unlock()
	if idle := z.idle[l]; len(idle) > 0 {
		enc := idle[len(idle)-1]
		z.idle[l] = idle[:len(idle)-1]
		return enc
	}
	enc, _ := zstd.NewWriter(nil, steadyOptions(l, true)...)
	return enc
}

// steadyOptions are the kept encoders' options; lowMem: the smaller history.
func steadyOptions(l zstd.EncoderLevel, lowMem bool) []zstd.EOption {
	return []zstd.EOption{zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
		zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true),
		zstd.WithWindowSize(1 << 20), zstd.WithLowerEncoderMem(lowMem)}
}

// give puts an encoder back for the next page.
func (z *steadyZstd) give(l zstd.EncoderLevel, enc *zstd.Encoder) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.idle[l] = append(z.idle[l], enc)
}

func (z *steadyZstd) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.EncoderLevelFromZstd(level)
	if level == compress.DefaultCompressionLevel {
		l = zstd.SpeedDefault
	}
	enc := z.take(l)
	defer z.give(l, enc)
	return enc.EncodeAll(src, dst[:0])
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
