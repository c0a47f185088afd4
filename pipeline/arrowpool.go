package pipeline

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is the allocator of the Parquet writers' column builders. Each
// row group's builders grow their buffers from nothing and hand them to the
// record written, which frees them once written: Go's allocator would make
// them anew for every row group (a quarter of all apply allocates), and
// under apply's soft memory limit every byte allocated costs collector time.
// Freed buffers wait here for the next row group instead, in lists that the
// collector does not empty (a sync.Pool is emptied at every cycle, and the
// cycles come often near the limit).
//
// Memory handed out is zeroed, as Go's allocator's is.
type bufferPool struct {
	mu   sync.Mutex
	free [poolClasses][][]byte
	held int // bytes in the free lists
}

const (
	poolMinShift = 6  // 64 bytes, arrow's alignment
	poolClasses  = 21 // up to 64 MiB; larger buffers go to the collector
	// poolHeld bounds the bytes kept for reuse: about two row groups of the
	// widest file.
	poolHeld = 48 << 20
)

var arrowPool = &bufferPool{}

var _ memory.Allocator = (*bufferPool)(nil)

// class is the index of the smallest class holding size bytes, or -1.
func poolClass(size int) int {
	if size <= 1<<poolMinShift {
		return 0
	}
	c := bits.Len(uint(size-1)) - poolMinShift
	if c >= poolClasses {
		return -1
	}
	return c
}

func (p *bufferPool) Allocate(size int) []byte {
	c := poolClass(size)
	if c < 0 {
		return make([]byte, size)
	}
	p.mu.Lock()
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		p.held -= cap(b)
		p.mu.Unlock()
		b = b[:size]
		clear(b)
		return b
	}
	p.mu.Unlock()
	return make([]byte, size, 1<<(c+poolMinShift))
}

func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *bufferPool) Free(b []byte) {
	n := cap(b)
	c := poolClass(n)
	if c < 0 || n != 1<<(c+poolMinShift) {
		return // not one of ours: the collector takes it
	}
	p.mu.Lock()
	if p.held+n <= poolHeld {
		p.free[c] = append(p.free[c], b[:0])
		p.held += n
	}
	p.mu.Unlock()
}
