package engine

import (
	"encoding/json"
	"testing"

	"github.com/promoral/promoral/pipeline/llm"
)

func TestMessagesJSONMatchesEncodingJSON(t *testing.T) {
	texts := []string{"", "plain", `quote " and \ backslash`, "tabs\tnew\nlines\r", "\x00\x1f ctrl", "é ü 中文 😀",
		"line\u2028sep\u2029", string([]byte{0xff, 'a', 0xc3}), "<html> & stuff"}
	for _, s := range texts {
		msgs := []llm.Message{{Role: "user", Content: s}, {Role: "assistant", Content: s + s}}
		var want []llm.Message
		if err := json.Unmarshal([]byte(llm.MessagesJSON(msgs)), &want); err != nil {
			t.Fatalf("%q: invalid JSON %s: %v", s, llm.MessagesJSON(msgs), err)
		}
		std, _ := json.Marshal(msgs)
		var back []llm.Message
		json.Unmarshal(std, &back)
		if len(want) != 2 || want[0].Content != back[0].Content || want[1].Content != back[1].Content {
			t.Errorf("%q: decoded %q, encoding/json gives %q", s, want, back)
		}
	}
}

func FuzzMessagesJSON(f *testing.F) {
	f.Add("hello \"world\"\n")
	f.Fuzz(func(t *testing.T, s string) {
		var got []llm.Message
		if err := json.Unmarshal([]byte(llm.MessagesJSON([]llm.Message{{Role: "user", Content: s}})), &got); err != nil {
			t.Fatalf("invalid JSON for %q: %v", s, err)
		}
		std, _ := json.Marshal([]llm.Message{{Role: "user", Content: s}})
		var want []llm.Message
		json.Unmarshal(std, &want)
		if got[0].Content != want[0].Content {
			t.Fatalf("%q: got %q want %q", s, got[0].Content, want[0].Content)
		}
	})
}
