package providers

import "strings"

// DefaultBaseURL is the URL a provider is called at when a model sets no
// base_url ("" for providers that make no network call).
func DefaultBaseURL(provider string) string {
	switch provider {
	case "openai":
		return strings.TrimRight(defaultOpenAIBaseURL, "/")
	case "anthropic":
		return strings.TrimRight(defaultAnthropicBaseURL, "/")
	case "gemini":
		return strings.TrimRight(defaultGeminiBaseURL, "/")
	}
	return ""
}
