package yamlstrict

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// DidYouMean returns `did you mean "x"?` for the known name closest to name,
// or "" when none is close enough to be the name meant. A swap of two
// neighbouring letters counts as one edit, like any other slip of the hand.
func DidYouMean(name string, known []string) string {
	if slices.Contains(known, name) {
		return "" // present, so wrong for another reason than a typo
	}
	if best := nearest(name, slices.Sorted(slices.Values(known))); best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return ""
}

// nearest is the known name a typo of name most likely meant, ignoring
// case, or "" when none is close enough; of two as near, the one listed
// first (an enum's declared order, the sorted names for DidYouMean).
func nearest(name string, known []string) string {
	best, bestD := "", 1<<30
	for _, k := range known {
		d := typoDistance(strings.ToLower(name), strings.ToLower(k))
		if d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || bestD > 3 || bestD >= len(name) {
		return ""
	}
	return best
}

// NameHint is the hint for a name that matches none of known: the near
// miss when there is one, else otherwise followed by the names there are.
func NameHint(name string, known []string, otherwise string) string {
	if s := DidYouMean(name, known); s != "" {
		return s
	}
	if len(known) == 0 {
		return otherwise
	}
	list := append([]string(nil), known...)
	sort.Strings(list)
	list = slices.Compact(list)
	const show = 12
	more := ""
	if len(list) > show {
		more = fmt.Sprintf(" and %d more", len(list)-show)
		list = list[:show]
	}
	if otherwise != "" {
		otherwise += "; "
	}
	return otherwise + "known: " + strings.Join(list, ", ") + more
}

// typoDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and adjacent transpositions each cost one.
func typoDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
