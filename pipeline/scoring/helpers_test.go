package scoring_test

import "github.com/promoral/promoral/internal/studytest"

// The small studies the tests build (internal/studytest), shared with the
// tests of package pipeline: 6 items, a scripted model, a one-shot and a
// looping strategy.
const (
	taskYAML      = studytest.TaskYAML
	oneShotYAML   = studytest.OneShotYAML
	scriptedModel = studytest.ScriptedModel
)

var (
	writeTree        = studytest.WriteTree
	baseTree         = studytest.BaseTree
	mustLoad         = studytest.MustLoad
	apply            = studytest.Apply
	wantErr          = studytest.WantErr
	applyFlat        = studytest.ApplyFlat
	assertUniqueKeys = studytest.AssertUniqueKeys
)
