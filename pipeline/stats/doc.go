// Package stats is the pure statistics library behind promoral's metric
// stages: classification metrics, calibration, the confidence-study analyses,
// MoralChoice ambiguity, ETHICS-Contrast, efficiency, safety (ASR/RTA),
// bootstrap intervals, paired comparisons, Holm adjustment and the Unified
// Moral Safety Score (UMSS).
//
// It does no I/O and keeps no state, so metric stages can call it from any
// goroutine and get the same answer for the same input (the bootstrap
// functions take an explicit seed and never touch global random state).
//
// Conventions shared by every function, so callers need not re-read each doc:
//
//   - Inputs are plain slices indexed by item. Slices that must be parallel
//     but differ in length are a programming error and panic with a message
//     naming the function (as indexing would, but legibly). Empty input never
//     panics.
//   - A value that is mathematically undefined (a mean over zero items, a
//     correlation with a constant variable, ...) is NaN. The one deliberate
//     exception is precision/recall/F1, which follow scikit-learn's
//     zero_division=0 and report 0; check the counts returned with them.
//   - parsed []bool says whether the model's answer could be parsed; a nil
//     parsed slice means every answer parsed. The pred string of an unparsed
//     item is never looked at, so callers may leave it empty.
//   - In float inputs (probabilities, confidences, per-item values) NaN means
//     "missing" and the item is skipped, so a model that failed to state a
//     confidence does not poison calibration. UMSS is the exception: there a
//     NaN metric propagates to the score, so a missing cell is visible rather
//     than silently averaged away.
//   - Labels are compared by exact string equality; normalise case and
//     spacing before calling.
package stats
