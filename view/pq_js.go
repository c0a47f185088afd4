//go:build js

package view

// A bundle's viewer (GOOS=js) reads no Parquet file: the bundle holds what
// the view reads from them, prepared when it was written (bundle.go). The
// Parquet library does not go into the WebAssembly; these stand in for
// pq.go so that the code reading run folders compiles, and say why if it
// is ever reached.

import "errors"

var errNoParquet = errors.New("a published bundle reads no Parquet file: its runs were prepared when it was written")

type pqFile struct {
	path  string
	start []int
}

type batch struct{ n int }

func openPQ(path string) (*pqFile, error)                    { return nil, errNoParquet }
func (p *pqFile) Close()                                     {}
func (p *pqFile) columns() []string                          { return nil }
func (p *pqFile) groups() int                                { return 0 }
func (p *pqFile) rows() int                                  { return 0 }
func (p *pqFile) has(col string) bool                        { return false }
func (p *pqFile) groupOf(i int) int                          { return 0 }
func (p *pqFile) read(g int, cols ...string) (*batch, error) { return nil, errNoParquet }
func (b *batch) release()                                    {}
func (b *batch) str(c string, i int) (string, bool)          { return "", false }
func (b *batch) strRef(c string, i int) (string, bool)       { return "", false }
func (b *batch) tri(c string, i int) int8                    { return -1 }
func (b *batch) float(c string, i int) (float64, bool)       { return 0, false }
func (b *batch) int(c string, i int) (int64, bool)           { return 0, false }
func (b *batch) value(c string, i int) any                   { return nil }
