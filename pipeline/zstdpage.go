package pipeline

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// pageCodec compresses Parquet pages with zstd through encoders made once
// and kept. arrow's own codec takes an encoder from a sync.Pool for every
// page; each collection empties the pool, and a new encoder sets up the
// history of zstd's default 8 MiB window, so a run that collects often
// (a soft memory limit, a small heap) allocated those 8 MiB again and again.
// Data pages are about 1 MiB (parquet's default page size), so a 1 MiB
// window finds the same matches in them. Decoding and streams stay arrow's.
type pageCodec struct {
	compress.Codec
}

var pageEncoders sync.Map // zstd.EncoderLevel -> *zstd.Encoder

func pageEncoder(level zstd.EncoderLevel) *zstd.Encoder {
	if e, ok := pageEncoders.Load(level); ok {
		return e.(*zstd.Encoder)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level),
		zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(1<<20))
	if err != nil {
		panic(err) // the options are constants
	}
	e, _ := pageEncoders.LoadOrStore(level, enc)
	return e.(*zstd.Encoder)
}

func (pageCodec) Encode(dst, src []byte) []byte {
	return pageEncoder(zstd.SpeedDefault).EncodeAll(src, dst[:0])
}

func (pageCodec) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.EncoderLevelFromZstd(level)
	if level == compress.DefaultCompressionLevel {
		l = zstd.SpeedDefault
	}
	return pageEncoder(l).EncodeAll(src, dst[:0])
}

func init() {
	if c, err := compress.GetCodec(compress.Codecs.Zstd); err == nil {
		compress.RegisterCodec(compress.Codecs.Zstd, pageCodec{c})
	}
}
