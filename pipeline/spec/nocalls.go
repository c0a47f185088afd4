package spec

import (
	"context"

	"github.com/promoral/promoral/pipeline/llm"
)

// noCalls is the provider of a model declared with provider: none, for
// strategies that only read recorded replies; calling it is an error.
type noCalls struct{ name string }

// NeverCalls reports whether m is declared with provider: none: its
// replies are recorded ones a strategy reads, and it is never called.
func (m *Model) NeverCalls() bool {
	_, ok := m.Provider.(noCalls)
	return ok
}

func (n noCalls) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, &llm.Error{Kind: llm.Permanent, Msg: "model " + n.name + " has provider none and cannot be called"}
}
