package engine_test

import (
	"testing"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/spec"
)

func TestTokenizerForOpenAIModels(t *testing.T) {
	count, name, ok := engine.Tokenizer(&spec.ModelSpec{Name: "g", Provider: "openai", Model: "gpt-4.1"})
	if !ok || name != "o200k_base" {
		t.Fatalf("gpt-4.1: %q %v", name, ok)
	}
	// o200k_base: "hello world" is two tokens, "Hello, world!" four.
	if n := count("hello world"); n != 2 {
		t.Errorf("hello world = %d tokens", n)
	}
	if n := count("Hello, world!"); n != 4 {
		t.Errorf("Hello, world! = %d tokens", n)
	}
	if _, _, ok := engine.Tokenizer(&spec.ModelSpec{Name: "c", Provider: "anthropic", Model: "claude-sonnet-4"}); ok {
		t.Error("no Go tokenizer exists for Claude; plan must say it estimates")
	}
}
