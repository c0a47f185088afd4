package stats

import "testing"

func contrastFixture() []ContrastPair {
	// a = acceptable, u = unacceptable.
	return []ContrastPair{
		{PairID: "p1", Edit: EditFlip, OrigPred: "a", OrigGold: "a", OrigParsed: true, EditedPred: "a", EditedGold: "u", EditedParsed: true},      // orig ✓, edit ✗
		{PairID: "p2", Edit: EditFlip, OrigPred: "a", OrigGold: "a", OrigParsed: true, EditedPred: "u", EditedGold: "u", EditedParsed: true},      // ✓ ✓
		{PairID: "p3", Edit: EditPreserve, OrigPred: "u", OrigGold: "u", OrigParsed: true, EditedPred: "u", EditedGold: "u", EditedParsed: true},  // ✓ ✓ same
		{PairID: "p4", Edit: EditPreserve, OrigPred: "a", OrigGold: "u", OrigParsed: true, EditedPred: "u", EditedGold: "u", EditedParsed: true},  // ✗ ✓ changed
		{PairID: "p5", Edit: EditPreserve, OrigPred: "a", OrigGold: "a", OrigParsed: true, EditedPred: "a", EditedGold: "a", EditedParsed: false}, // ✓ unparsed
		{PairID: "p6", Edit: EditPreserve, OrigPred: "a", OrigGold: "u", OrigParsed: true, EditedPred: "a", EditedGold: "u", EditedParsed: true},  // ✗ ✗ same
	}
}

func TestContrastWrong(t *testing.T) {
	r := Contrast(contrastFixture(), UnparsedWrong)
	// Originals ✓: p1 p2 p3 p5 → 4/6. Edits ✓: p2 p3 p4 → 3/6 (p5 unparsed
	// counts wrong). Diff = 1/2 − 2/3 = −1/6. Flip edits: p1 ✗ p2 ✓ → 1/2.
	// Preserve: p3 same, p4 changed, p5 unparsed → inconsistent, p6 same
	// (both wrong, still stable) → 2/4.
	near(t, "orig", r.OrigAccuracy, 4.0/6, tol)
	near(t, "edited", r.EditedAccuracy, 0.5, tol)
	near(t, "diff", r.Diff, -1.0/6, tol)
	near(t, "flip", r.FlipAccuracy, 0.5, tol)
	near(t, "preserve", r.PreserveConsistency, 0.5, tol)
	eqInt(t, "NEdited", r.NEdited, 6)
	eqInt(t, "NPreserve", r.NPreserve, 4)
}

func TestContrastExclude(t *testing.T) {
	r := Contrast(contrastFixture(), UnparsedExclude)
	// Edits: p5 dropped → 3/5; diff = 3/5 − 4/6 = −1/15. Preserve: p5
	// dropped → p3, p6 same of p3, p4, p6 → 2/3.
	near(t, "orig", r.OrigAccuracy, 4.0/6, tol)
	near(t, "edited", r.EditedAccuracy, 0.6, tol)
	near(t, "diff", r.Diff, -1.0/15, tol)
	near(t, "flip", r.FlipAccuracy, 0.5, tol)
	near(t, "preserve", r.PreserveConsistency, 2.0/3, tol)
	eqInt(t, "NEdited", r.NEdited, 5)
	eqInt(t, "NPreserve", r.NPreserve, 3)
}

func TestContrastEmpty(t *testing.T) {
	r := Contrast(nil, UnparsedWrong)
	near(t, "orig", r.OrigAccuracy, nan, 0)
	near(t, "diff", r.Diff, nan, 0)
	near(t, "flip", r.FlipAccuracy, nan, 0)
	near(t, "preserve", r.PreserveConsistency, nan, 0)
	// Only flip pairs: preserve consistency undefined, the rest defined.
	r = Contrast(contrastFixture()[:2], UnparsedWrong)
	near(t, "no preserve pairs", r.PreserveConsistency, nan, 0)
	near(t, "flip only", r.FlipAccuracy, 0.5, tol)
}
