package engine

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/providers"
	"github.com/promoral/promoral/pipeline/secret"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
)

// DefaultTimeout bounds one attempt at a model call unless limits.timeout says otherwise.
const DefaultTimeout = 120 * time.Second

// Connect gives every model the run will call its SDK client, with the key
// from the environment or a .env file in the working directory. Scripted
// and none models already have theirs. Every model whose key is missing is
// listed in one error, before any call, except an optional one: its cells
// (and the tasks it judges) are left out of the run and Study.Skipped says
// so. In offline mode nothing is connected: only the journal serves.
func Connect(st *spec.Study, offline bool) error {
	if offline {
		return nil
	}
	used := map[*spec.Model]bool{}
	for _, c := range st.Cells {
		used[c.Model] = true
		if c.Task.Judge != nil {
			used[c.Task.Judge.Model] = true
		}
	}
	dotenv, err := providers.LoadDotEnv(".env")
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf(".env: %w", err)
	}
	var missing []string
	for _, m := range st.Models {
		if !used[m] || m.Provider != nil {
			continue
		}
		ms := m.Spec
		keyVar := ms.KeyEnv
		if keyVar == "" {
			keyVar = providers.DefaultKeyVar(ms.Provider, ms.BaseURL)
		}
		key := ""
		if keyVar != "" {
			var ok bool
			if key, ok = providers.LookupKey(keyVar, dotenv); !ok && m.Spec.Optional {
				st.Skipped = append(st.Skipped, fmt.Sprintf("model %s (optional; %s is not set): %s", m.Name, keyVar, dropCells(st, m)))
				continue
			} else if !ok {
				alt := ""
				if keyVar == "GOOGLE_API_KEY" {
					alt = " or GEMINI_API_KEY"
				}
				missing = append(missing, fmt.Sprintf("%s: set %s%s (environment or .env)", m.Name, keyVar, alt))
				continue
			}
		} else if ms.BaseURL != "" && !providers.IsLocalHost(ms.BaseURL) && ms.Optional {
			st.Skipped = append(st.Skipped, fmt.Sprintf("model %s (optional; no key_env for %s): %s", m.Name, secret.URL(ms.BaseURL), dropCells(st, m)))
			continue
		} else if ms.BaseURL != "" && !providers.IsLocalHost(ms.BaseURL) {
			missing = append(missing, fmt.Sprintf("%s: name the key variable with key_env (no default for %s)", m.Name, ms.BaseURL))
			continue
		}
		timeout := ms.Limits.Timeout
		if timeout == 0 {
			timeout = DefaultTimeout
		}
		p, err := providers.New(providers.Config{Provider: ms.Provider, BaseURL: ms.BaseURL, APIKey: key, KeyVar: keyVar, Timeout: timeout,
			MaxReplyBytes: ms.Limits.MaxReplyBytes})
		if err != nil {
			return fmt.Errorf("model %s: %w", m.Name, err)
		}
		m.Provider = p
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		verb := "has"
		if len(missing) > 1 {
			verb = "have"
		}
		return fmt.Errorf("%s %s no API key; no call was made:\n  %s", spec.Plural(len(missing), "model", "models"), verb, strings.Join(missing, "\n  "))
	}
	return nil
}

// dropCells removes the cells an optional model without a key would run,
// as the model under test or as a task's judge, and says which.
func dropCells(st *spec.Study, m *spec.Model) string {
	kept := st.Cells[:0]
	dropped := map[string]int{}
	var order []string
	for _, c := range st.Cells {
		if c.Model != m && (c.Task.Judge == nil || c.Task.Judge.Model != m) {
			kept = append(kept, c)
			continue
		}
		what := c.Model.Name + " x " + c.Strategy.Name + " x " + c.Task.Name
		if c.Model != m {
			what = "task " + c.Task.Name + " (judged by it)"
		}
		if dropped[what] == 0 {
			order = append(order, what)
		}
		dropped[what] += len(c.Task.Items)
	}
	st.Cells = kept
	if len(order) == 0 {
		return "nothing of this run needed it"
	}
	n := 0
	for _, w := range order {
		n += dropped[w]
	}
	return fmt.Sprintf("%s not run: %s; set the key to run them", spec.Plural(n, "case", "cases"), strings.Join(order, ", "))
}

type transportDoer struct{ t *transport.Transport }

func (d transportDoer) Do(ctx context.Context, req *llm.Request, onAttempt func(transport.Attempt)) (*llm.Response, error) {
	return d.t.Do(ctx, req, onAttempt)
}
