package dataset

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Randomness here is keyed by (seed, id), never by position or call order:
// each id gets its own PCG stream seeded with the spec's seed and a 64-bit
// FNV-1a hash of the id. PCG and FNV are fixed algorithms over uint64, so the
// results are the same on every platform; the bounded draw below is spelled
// out (rather than rand.Rand.IntN) so a Go release cannot change it either.
// TestPermutationGolden pins the output.

func stream(seed uint64, purpose, id string) *rand.PCG {
	// The purpose prefix keeps sampling and shuffling independent when a
	// spec uses the same seed for both.
	h := fnv.New64a()
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return rand.NewPCG(seed, h.Sum64())
}

// below returns a uniform integer in [0, n) by rejection sampling, which
// avoids modulo bias.
func below(src *rand.PCG, n uint64) uint64 {
	limit := math.MaxUint64 - math.MaxUint64%n
	for {
		if v := src.Uint64(); v < limit {
			return v % n
		}
	}
}

// permutation returns perm with perm[newPos] = oldPos, a Fisher-Yates
// shuffle of n positions drawn from (seed, id).
func permutation(seed uint64, id string, n int) []int {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	src := stream(seed, "shuffle", id)
	for i := n - 1; i > 0; i-- {
		j := int(below(src, uint64(i+1)))
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm
}

// sampleRows keeps the n rows whose (seed, id) draws are smallest, in file
// order. Because a row's draw depends only on its own id, the sample of a
// filtered file is the sample of the full file restricted to the filter
// (as long as n still fits): adding or removing other rows only moves the
// cut-off, never reshuffles who is in front of whom.
func sampleRows(rows []row, n int, seed uint64) []row {
	type keyed struct {
		key uint64
		i   int
	}
	ks := make([]keyed, len(rows))
	for i, r := range rows {
		ks[i] = keyed{stream(seed, "sample", r.id).Uint64(), i}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	idx := make([]int, n)
	for i := range idx {
		idx[i] = ks[i].i
	}
	slices.Sort(idx)
	out := make([]row, n)
	for i, j := range idx {
		out[i] = rows[j]
	}
	return out
}

// shuffleItem applies sh to one item, writing new fields only (the source
// option fields and lists are left as they were, except when into_list
// names the list itself).
func shuffleItem(it *Item, sh *Shuffle) error {
	f := it.Fields
	var opts []any
	var names []string // original name of each option: field name or letter
	if len(sh.Options) > 0 {
		for _, o := range sh.Options {
			v, ok := f[o]
			if !ok {
				return fmt.Errorf("option field %q is missing; fix the row or change dataset.shuffle.options", o)
			}
			opts = append(opts, v)
		}
		names = sh.Options
	} else {
		v, ok := f[sh.List]
		if !ok {
			return fmt.Errorf("list field %q is missing; fix the row or change dataset.shuffle.list", sh.List)
		}
		list, ok := v.([]any)
		if !ok || len(list) == 0 || len(list) > 26 {
			return fmt.Errorf("field %q is %s; shuffle.list needs a list of 1 to 26 options", sh.List, describe(v))
		}
		opts = list
		for i := range list {
			names = append(names, letter(i))
		}
	}
	n := len(opts)
	perm := permutation(sh.Seed, it.ID, n)
	shuffled := make([]any, n)
	order := make([]string, n)
	newPos := make([]int, n) // oldPos -> newPos
	for i, old := range perm {
		shuffled[i] = opts[old]
		order[i] = names[old]
		newPos[old] = i
	}
	if len(sh.Into) > 0 {
		if len(sh.Into) != n {
			return fmt.Errorf("has %d options but dataset.shuffle.into names %d fields; list one field per option", n, len(sh.Into))
		}
		for i, name := range sh.Into {
			f[name] = shuffled[i]
		}
	}
	if sh.List != "" {
		f[sh.intoList()] = shuffled
		for _, p := range sh.Parallel {
			v, ok := f[p]
			if !ok {
				return fmt.Errorf("parallel field %q is missing; fix the row or change dataset.shuffle.parallel", p)
			}
			pl, ok := v.([]any)
			if !ok || len(pl) != n {
				return fmt.Errorf("parallel field %q is %s; it must be a list as long as %q (%d)", p, describe(v), sh.List, n)
			}
			out := make([]any, n)
			for i, old := range perm {
				out[i] = pl[old]
			}
			f[p] = out
		}
	}
	f[sh.orderInto()] = order
	if sh.Gold == "" {
		return nil
	}
	g, ok := f[sh.Gold]
	if !ok {
		return fmt.Errorf("gold field %q is missing; fix the row or change dataset.shuffle.gold", sh.Gold)
	}
	if g == nil || g == "" {
		// No ground truth (MoralChoice high ambiguity): still shuffled,
		// but the gold letter stays empty.
		f[sh.goldInto()] = ""
		return nil
	}
	old, err := goldIndex(g, sh, names)
	if err != nil {
		return err
	}
	f[sh.goldInto()] = letter(newPos[old])
	return nil
}

// goldIndex finds which original option the gold value names.
func goldIndex(g any, sh *Shuffle, names []string) (int, error) {
	n := len(names)
	switch sh.goldKind() {
	case "name":
		s, _ := scalarString(g)
		if i := slices.Index(names, s); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("gold field %q is %s, which is not one of the options %v; fix the row or set shuffle.gold_kind", sh.Gold, describe(g), names)
	case "letter":
		s, _ := g.(string)
		s = strings.ToUpper(strings.TrimSpace(s))
		if len(s) == 1 && s[0] >= 'A' && int(s[0]-'A') < n {
			return int(s[0] - 'A'), nil
		}
		return 0, fmt.Errorf("gold field %q is %s, not a letter from A to %s; fix the row or set shuffle.gold_kind", sh.Gold, describe(g), letter(n-1))
	default: // index
		s, _ := scalarString(g)
		if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < n {
			return i, nil
		}
		return 0, fmt.Errorf("gold field %q is %s, not a 0-based index below %d; fix the row or set shuffle.gold_kind", sh.Gold, describe(g), n)
	}
}
