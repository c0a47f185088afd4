package parse

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSpaceNormalize(t *testing.T) {
	ethics, letters := ethicsSpace(), letterSpace("A", "B")
	cs := &Space{Labels: []Label{{Value: "Yes"}, {Value: "No"}}, CaseSensitive: true}
	tests := []struct {
		space *Space
		raw   string
		want  string // "" = not ok
	}{
		{ethics, "Unacceptable.", "unacceptable"},
		{ethics, "**Not wrong**", "acceptable"},
		{ethics, "  NOT   WRONG ", "acceptable"},
		{ethics, `"wrong"`, "unacceptable"},
		{ethics, "isn’t wrong", "acceptable"},
		{ethics, "not wrong at all", ""}, // exact only: no searching
		{ethics, "unacceptable acceptable", ""},
		{ethics, "", ""},
		{ethics, "**", ""},
		{letters, "(b)", "B"},
		{letters, "B)", "B"},
		{letters, "`A`", "A"},
		{letters, "C", ""},
		{cs, "Yes", "Yes"},
		{cs, "yes", ""},
	}
	for _, tc := range tests {
		got, ok := tc.space.Normalize(tc.raw)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.raw, got, ok, tc.want)
		}
	}
}

func TestSpaceGold(t *testing.T) {
	ethics := ethicsSpace()
	tests := []struct {
		raw  any
		want string
	}{
		{"1", "unacceptable"},
		{" 0 ", "acceptable"},
		{1, "unacceptable"},
		{int64(0), "acceptable"},
		{uint8(1), "unacceptable"},
		{1.0, "unacceptable"},
		{float32(0), "acceptable"},
		{"1.0", "unacceptable"},
		{true, "unacceptable"},
		{false, "acceptable"},
		{json.Number("1"), "unacceptable"},
		{"wrong", "unacceptable"}, // falls back to Normalize
		{"Not Wrong", "acceptable"},
		{2, ""},
		{0.5, ""},
		{nil, ""},
		{[]int{1}, ""},
		{"", ""},
	}
	for _, tc := range tests {
		got, ok := ethics.Gold(tc.raw)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Gold(%#v) = %q, %v; want %q", tc.raw, got, ok, tc.want)
		}
	}
}

func TestSpaceCheck(t *testing.T) {
	tests := []struct {
		name  string
		space *Space
		want  []string // substrings, one per expected error
	}{
		{"ethics ok", ethicsSpace(), nil},
		{"scruples ok", scruplesSpace(), nil},
		{"safety ok", safetySpace(), nil},
		{"nil", nil, []string{"no labels"}},
		{"empty", &Space{}, []string{"no labels"}},
		{"empty value", &Space{Labels: []Label{{Value: " ** "}}}, []string{"empty after trimming"}},
		{"duplicate value", &Space{Labels: []Label{{Value: "A"}, {Value: "a"}}}, []string{`is also value "A"`}},
		{"alias is other label", &Space{Labels: []Label{{Value: "acceptable"}, {Value: "unacceptable", Aliases: []string{"Acceptable."}}}}, []string{`alias "Acceptable." is also value "acceptable" of label "acceptable"`}},
		{"alias of two labels", &Space{Labels: []Label{{Value: "x", Aliases: []string{"ok"}}, {Value: "y", Aliases: []string{"OK"}}}}, []string{`alias "OK" is also alias "ok"`}},
		{"alias repeats own value", &Space{Labels: []Label{{Value: "REFUSAL", Aliases: []string{"refusal"}}}}, []string{"duplicates its value"}},
		{"case sensitive allows case variants", &Space{Labels: []Label{{Value: "A"}, {Value: "a"}}, CaseSensitive: true}, nil},
		{"gold clash", &Space{Labels: []Label{{Value: "x", Gold: []string{"1"}}, {Value: "y", Gold: []string{"1.0"}}}}, []string{"gold value"}},
		{"empty gold", &Space{Labels: []Label{{Value: "x", Gold: []string{" "}}}}, []string{"empty gold"}},
		{"bad positive", &Space{Labels: []Label{{Value: "x"}}, Positive: "y"}, []string{"positive class"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, tc.space.Check(), tc.want)
		})
	}
}

// checkErrors wants one error per expected substring, in order.
func checkErrors(t *testing.T, errs []error, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors %v, want %d %q", len(errs), errs, len(want), want)
	}
	for i, err := range errs {
		if !strings.Contains(err.Error(), want[i]) {
			t.Errorf("error %d = %q, want it to contain %q", i, err, want[i])
		}
	}
}

func TestIndexFold(t *testing.T) {
	tests := []struct {
		s, sub string
		want   int
	}{
		{"Final ANSWER: x", "answer", 6},
		{"aaaAAb", "aab", 3},
		{"xx</Answer >", "</answer", 2},
		{"no match here", "answer", -1},
		{"ans", "answer", -1},
		{"Ünïcode answer", "answer", 10},
		{"", "a", -1},
		{"abc", "", 0},
	}
	for _, tc := range tests {
		if got := indexFold(tc.s, tc.sub); got != tc.want {
			t.Errorf("indexFold(%q, %q) = %d, want %d", tc.s, tc.sub, got, tc.want)
		}
	}
}
