package pipeline_test

import "github.com/promoral/promoral/internal/studytest"

// The small studies the tests build (internal/studytest): 6 items, a
// scripted model, a one-shot and a looping strategy, a judged safety task.
const (
	itemsJSONL     = studytest.ItemsJSONL
	taskYAML       = studytest.TaskYAML
	oneShotYAML    = studytest.OneShotYAML
	loopYAML       = studytest.LoopYAML
	scriptedModel  = studytest.ScriptedModel
	safetyTaskYAML = studytest.SafetyTaskYAML
	replyYAML      = studytest.ReplyYAML
)

var (
	writeTree        = studytest.WriteTree
	baseTree         = studytest.BaseTree
	mustLoad         = studytest.MustLoad
	apply            = studytest.Apply
	wantErr          = studytest.WantErr
	shardTree        = studytest.ShardTree
	readRows         = studytest.ReadRows
	newRandomServer  = studytest.NewRandomServer
	repeatsStudy     = studytest.RepeatsStudy
	runRepeats       = studytest.RunRepeats
	applyFlat        = studytest.ApplyFlat
	assertUniqueKeys = studytest.AssertUniqueKeys
)
