package stats

import (
	"math"
	"sort"
)

// LabelShare is one label's count and share in a distribution.
type LabelShare struct {
	Label string
	Count int
	Share float64
}

// ChoiceDistribution is the distribution of parsed choices (e.g. MoralChoice
// "A"/"B"), sorted by label. Unparsed answers are left out, so shares sum to
// 1 over what the model actually chose; report UnparsedRate beside it. If a
// refusal should count as a choice, give it a label and mark it parsed.
// Empty when nothing parsed.
func ChoiceDistribution(choices []string, parsed []bool) []LabelShare {
	mustParsed("ChoiceDistribution", len(choices), parsed)
	counts := map[string]int{}
	n := 0
	for i, c := range choices {
		if isParsed(parsed, i) {
			counts[c]++
			n++
		}
	}
	out := make([]LabelShare, 0, len(counts))
	for l, c := range counts {
		out = append(out, LabelShare{Label: l, Count: c, Share: float64(c) / float64(n)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

// EntropyBits is the Shannon entropy, in bits, of a distribution given as
// counts (0·log 0 = 0). NaN when the counts sum to 0. For two options it
// runs from 0 (always the same choice) to 1 (an even split).
func EntropyBits(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return math.NaN()
	}
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(total)
			h -= p * math.Log2(p)
		}
	}
	return h
}

// ChoiceEntropy is EntropyBits of ChoiceDistribution(choices, parsed).
func ChoiceEntropy(choices []string, parsed []bool) float64 {
	d := ChoiceDistribution(choices, parsed)
	counts := make([]int, len(d))
	for i, s := range d {
		counts[i] = s.Count
	}
	return EntropyBits(counts)
}

// FormAgreement is the share of items whose answers agree across question
// forms. answers[i] holds item i's answer under each form, already mapped to
// a common label (e.g. the action chosen, not the letter); "" marks a form
// that was not asked or did not parse. An item counts only if at least two
// forms answered (agreement is undefined for one), and agrees when all its
// answered forms give the same label. n is the number of items counted;
// agreement is NaN when n == 0.
func FormAgreement(answers [][]string) (agreement float64, n int) {
	agree := 0
	for _, forms := range answers {
		first, k, same := "", 0, true
		for _, a := range forms {
			if a == "" {
				continue
			}
			if k == 0 {
				first = a
			} else if a != first {
				same = false
			}
			k++
		}
		if k < 2 {
			continue
		}
		n++
		if same {
			agree++
		}
	}
	return ratio(agree, n), n
}
