package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Canonical returns the request's canonical JSON: struct fields in declaration
// order, map keys sorted (encoding/json sorts them), no insignificant space.
// Two requests with the same canonical form get the same reply from the cache.
func (r *Request) Canonical() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// Only Extra can hold unmarshalable values; config validation rejects them.
		panic("llm: request cannot be encoded: " + err.Error())
	}
	return b
}

// Key is the hex SHA-256 of the canonical form: the cache and journal key.
func (r *Request) Key() string {
	sum := sha256.Sum256(r.Canonical())
	return hex.EncodeToString(sum[:])
}
