package journal

import "encoding/hex"

// Keys calls fn once with the key of every reply the journal indexes, in
// no particular order: the keys Lookup may serve (a reply Lookup finds
// unusable is still listed).
func (j *Journal) Keys(fn func(key string)) error {
	j.mu.Lock()
	if err := j.readHead(); err != nil {
		j.mu.Unlock()
		return err
	}
	var spans []span
	for _, v := range j.index.tab.vals {
		if v != 0 {
			spans = append(spans, unpackSpan(v))
		}
	}
	long := make([][32]byte, 0, len(j.index.long))
	for k := range j.index.long {
		long = append(long, k)
	}
	j.mu.Unlock()
	// A key may be in both (a reply that replaced an earlier one): once.
	seen := make(map[[32]byte]bool, len(long))
	for _, k := range long {
		seen[k] = true
		fn(hex.EncodeToString(k[:]))
	}
	for _, sp := range spans {
		if k, ok := j.keyAt(sp); ok && !seen[k] {
			fn(hex.EncodeToString(k[:]))
		}
	}
	return nil
}
