package review_test

import "github.com/promoral/promoral/internal/studytest"

// The small studies the tests build (internal/studytest), shared with
// pipeline's tests.
var (
	writeTree       = studytest.WriteTree
	baseTree        = studytest.BaseTree
	mustLoad        = studytest.MustLoad
	apply           = studytest.Apply
	wantErr         = studytest.WantErr
	shardTree       = studytest.ShardTree
	shardApply      = studytest.ShardApply
	readRows        = studytest.ReadRows
	rowSet          = studytest.RowSet
	countLines      = studytest.CountLines
	newRandomServer = studytest.NewRandomServer
	repeatsStudy    = studytest.RepeatsStudy
	runRepeats      = studytest.RunRepeats
	batchPlanTree   = studytest.BatchPlanTree
)
