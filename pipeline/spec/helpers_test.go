package spec_test

import "github.com/promoral/promoral/internal/studytest"

// The small studies the tests build (internal/studytest): 6 items, a
// scripted model, a one-shot and a looping strategy.
const (
	taskYAML    = studytest.TaskYAML
	oneShotYAML = studytest.OneShotYAML
	loopYAML    = studytest.LoopYAML
)

var (
	writeTree     = studytest.WriteTree
	baseTree      = studytest.BaseTree
	mustLoad      = studytest.MustLoad
	wantErr       = studytest.WantErr
	shardTree     = studytest.ShardTree
	batchPlanTree = studytest.BatchPlanTree
)
