package parquetio

import (
	"crypto/rand"
	"encoding/hex"
)

// tmpMark marks a file being written next to the one it will replace
// (.<name>.tmp-<random>); tidying a run folder removes what a killed writer
// left with it.
const TmpMark = ".tmp-"

func RandomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
