package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/promoral/promoral/pipeline/llm"
)

// Connect gives every model in the matrix its provider. Scripted models
// already have one; the others need their SDK client and key. Every model
// whose key is missing is listed in one error, before any call.
func Connect(st *Study, offline bool) error {
	var missing []string
	used := map[*Model]bool{}
	for _, c := range st.Cells {
		used[c.Model] = true
	}
	for _, m := range st.Models {
		if !used[m] || m.Provider != nil || offline {
			continue
		}
		missing = append(missing, fmt.Sprintf("%s (provider %s is not available in this build)", m.Name, m.Spec.Provider))
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("cannot call %d model(s):\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
	return nil
}

// noCalls is the provider of a model declared with provider: none, for
// strategies that only read recorded replies; calling it is an error.
type noCalls struct{ name string }

func (n noCalls) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, &llm.Error{Kind: llm.Permanent, Msg: "model " + n.name + " has provider none and cannot be called"}
}
