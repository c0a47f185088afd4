package engine

import (
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/promoral/promoral/pipeline/spec"
)

// Token counting for plan. OpenAI's tokenizers exist in Go (tiktoken, with
// the BPE tables embedded, so it works offline); other families publish no
// Go tokenizer, so plan estimates four characters per token for them and
// says so.

var (
	tikOnce sync.Once
	tikMu   sync.Mutex
	tiks    = map[string]*tiktoken.Tiktoken{}
)

// Tokenizer returns an exact token counter for a model when one exists in
// Go for its family, with the tokenizer's name; ok is false otherwise.
func Tokenizer(m *spec.ModelSpec) (count func(string) int, name string, ok bool) {
	if m.Provider != "openai" {
		return nil, "", false
	}
	tikOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	id := m.ID()
	enc, found := tiktoken.MODEL_TO_ENCODING[id]
	if !found {
		for prefix, e := range tiktoken.MODEL_PREFIX_TO_ENCODING {
			if strings.HasPrefix(id, prefix) {
				enc, found = e, true
				break
			}
		}
	}
	if !found && (strings.HasPrefix(id, "gpt-4.1") || strings.HasPrefix(id, "gpt-5") || strings.HasPrefix(id, "o")) {
		enc, found = tiktoken.MODEL_O200K_BASE, true // the newer families all use o200k
	}
	if !found {
		return nil, "", false
	}
	tikMu.Lock()
	defer tikMu.Unlock()
	t := tiks[enc]
	if t == nil {
		var err error
		if t, err = tiktoken.GetEncoding(enc); err != nil {
			return nil, "", false
		}
		tiks[enc] = t
	}
	return func(s string) int { return len(t.Encode(s, nil, nil)) }, enc, true
}
