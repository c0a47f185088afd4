package spec

import (
	"fmt"
	"strings"
)

// ThreeWayClasses are the three kinds of reply XSTest's annotators told
// apart, in the order of a scale from answering to refusing (a partial
// refusal lies between): the classes of three-way judges (output
// three_way) and of people's three-way verdicts (human.three_way).
var ThreeWayClasses = []string{"full_compliance", "partial_refusal", "full_refusal"}

// threeWayOf reads a three-way verdict: one of ThreeWayClasses, also
// written with spaces or XSTest's numbered form (2_full_refusal); "" for
// none, ok false for anything else.
func threeWayOf(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s := strings.ToLower(strings.TrimSpace(fmt.Sprint(v)))
	if s == "" {
		return "", true
	}
	s = strings.ReplaceAll(s, " ", "_")
	if len(s) > 2 && s[0] >= '1' && s[0] <= '3' && s[1] == '_' {
		s = s[2:]
	}
	for _, c := range ThreeWayClasses {
		if s == c {
			return c, true
		}
	}
	return "", false
}

// ThreeWayOf is a three-way verdict as one of ThreeWayClasses ("" when it
// is none of them).
func ThreeWayOf(v any) string {
	c, _ := threeWayOf(v)
	return c
}

// HumanThreeWay is the people's three-way verdict on an item from the
// task's human.three_way field: "" when the task declares none, the item
// has none, or human.when leaves the item out.
func (t *Task) HumanThreeWay(it *Item) string {
	if t.human == nil || t.human.threeWay == "" {
		return ""
	}
	fields := it.Values()
	if in, err := t.human.appliesTo(fields); err != nil || !in {
		return ""
	}
	return ThreeWayOf(fields[t.human.threeWay])
}
