package dataset

import "hash/maphash"

// idSet finds a dataset's duplicate ids as its rows load. A Go map of
// every id to its row costs some 30 to 60 bytes an id (a million ids: tens
// of MB, at the load's peak); this table costs 8 to 16 bytes an id: a slot
// is the id's hash tag and its place in the loader's lists, where the id
// itself already is. A tag that matches is confirmed against the id, so
// ids whose hashes collide are never taken for duplicates.
type idSet struct {
	slots []uint64 // 0: empty; else tag<<32 | entry+1
	used  int
	tag   uint64 // of the id find did not find, for add
	// entry gives an entry's id and row: entries are the loader's rows
	// (2k: l.rows.at(k)) and the ids of rows it dropped (2j+1).
	entry func(e uint32) (id string, row int)
}

var idSeed = maphash.MakeSeed()

// idHash hashes an id; tests replace it to make ids collide.
var idHash = func(id string) uint64 { return maphash.String(idSeed, id) }

// find returns the row of an id added before, or, when there is none,
// the slot to add it at.
func (s *idSet) find(id string) (row int, dup bool, slot int) {
	if (s.used+1)*4 > len(s.slots)*3 {
		s.grow()
	}
	h := idHash(id)
	tag := h >> 32
	s.tag = tag
	mask := len(s.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		v := s.slots[i]
		if v == 0 {
			return 0, false, i
		}
		if v>>32 != tag {
			continue
		}
		if prev, n := s.entry(uint32(v) - 1); prev == id {
			return n, true, 0
		}
	}
}

// add puts entry e, of the id find did not find, at the slot it gave.
func (s *idSet) add(slot int, e uint32) {
	s.slots[slot] = s.tag<<32 | uint64(e+1)
	s.used++
}

func (s *idSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(16, 2*len(old)))
	mask := len(s.slots) - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		id, _ := s.entry(uint32(v) - 1)
		i := int(idHash(id)) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = v
	}
}
