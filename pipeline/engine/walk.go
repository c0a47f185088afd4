package engine

import (
	"context"
	"errors"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
)

// errNoReply stops a WalkCase at a call src has no reply for.
var errNoReply = errors.New("not journaled")

// WalkCase walks one case through its strategy graph as apply --offline
// would, every call served by src and none sent; it returns how many calls
// src served. An error is a call src has no reply for, or a stage that
// fails on this item (a template error): either way, work for an apply.
// A judged task's judge is not walked.
func WalkCase(src *ReplySource, c *spec.Case) (served int, err error) {
	x := newCaseExec(context.Background(), c, c.Model, c.Strategy, func(x *caseExec, stage string, req *llm.Request) (*llm.Response, error) {
		var limit int64
		if x.model.Spec != nil {
			limit = llm.ReplyLimit(req, x.model.Spec.Limits.MaxReplyBytes)
		}
		rec, ok, err := src.lookup(transport.CacheKey(x.model.Identity, req), limit)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errNoReply
		}
		served++
		return rec.Resp, nil
	})
	x.repeat, x.sweep = c.Repeat, c.Sweep
	_, _, err = walkGraph(x, nil, 1000)
	return served, err
}
