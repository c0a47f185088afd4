package secret

import (
	"strings"
	"testing"
)

const (
	openaiKey    = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	anthropicKey = "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3f"
	googleKey    = "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
)

func TestRedact(t *testing.T) {
	cases := []struct{ in, gone, kept string }{
		{"request rejected: invalid key " + openaiKey, openaiKey, "invalid key"},
		{`{"error":"bad","echo":{"Authorization":"Bearer opaque-token-0123456789"}}`, "opaque-token-0123456789", `"Authorization":"Bearer [redacted]"`},
		{"Authorization: Bearer abcdefghij0123456789", "abcdefghij0123456789", "Authorization: Bearer [redacted]"},
		{`headers: {"x-api-key": "` + anthropicKey + `"}`, anthropicKey, `"x-api-key": "[redacted]"`},
		{"x-goog-api-key=" + googleKey, googleKey, "x-goog-api-key="},
		{`Post "https://alice:hunter2@proxy.example/v1/chat": EOF`, "hunter2", "https://[redacted]@proxy.example/v1/chat"},
		{"GET https://host/v1/models?key=s3cr3tvalue&alt=json", "s3cr3tvalue", "alt=json"},
		{"proxy said: password=correct-horse", "correct-horse", "password="},
	}
	for _, c := range cases {
		got := Redact(c.in)
		if strings.Contains(got, c.gone) || !strings.Contains(got, c.kept) {
			t.Errorf("Redact(%q) = %q; want %q gone and %q kept", c.in, got, c.gone, c.kept)
		}
	}
	for _, plain := range []string{
		"request rejected (HTTP 400): maximum context length is 8192 tokens",
		"stage \"ask\", item i001: no scripted reply matches",
		"sk-learn is a library", "model gpt-4.1 at https://api.openai.com/v1",
	} {
		if got := Redact(plain); got != plain {
			t.Errorf("Redact changed text without credentials: %q -> %q", plain, got)
		}
	}
}

func TestRedactKeyRemovesAnExactKey(t *testing.T) {
	key := "local-key-with-no-known-shape"
	if got := RedactKey("the server echoed local-key-with-no-known-shape back", key); strings.Contains(got, key) {
		t.Fatal(got)
	}
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pass@example.com/v1":       "https://[redacted]@example.com/v1",
		"https://example.com/v1?api_key=abc&x=1": "https://example.com/v1?api_key=[redacted]&x=1",
		"http://127.0.0.1:8000/v1":               "http://127.0.0.1:8000/v1",
		"https://api.together.xyz/v1":            "https://api.together.xyz/v1",
		"https://tok@example.com":                "https://[redacted]@example.com",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLooksLikeKey(t *testing.T) {
	for _, k := range []string{openaiKey, anthropicKey, googleKey, "sk-abcdefghijklmnopqrstuvwxyz012345",
		"Xk8sPq2LmN7vR4tY6wZ0aB3cD5eFgH1jK"} {
		if !LooksLikeKey(k) {
			t.Errorf("%q should look like a key", k)
		}
	}
	for _, v := range []string{"OPENAI_API_KEY", "TOGETHER_API_KEY", "MY_SERVICE_API_KEY_2024", "DEEPSEEK_API_KEY",
		"gpt-4.1", "claude-sonnet-4-20250514", "meta-llama-3-1-70B-Instruct-Turbo", "Meta-Llama-3.1-405B-Instruct-Turbo", "DeepSeekV3Chat0324", "https://api.openai.com/v1", "Is this wrong?", ""} {
		if LooksLikeKey(v) {
			t.Errorf("%q should not look like a key", v)
		}
	}
}

func TestLooksLikeHexKey(t *testing.T) {
	if !LooksLikeHexKey("3f9a0c1d2e4b5a6978c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2") || LooksLikeHexKey("TOGETHER_API_KEY") || LooksLikeHexKey("deadbeef") {
		t.Fatal("LooksLikeHexKey")
	}
	// A commit id in an ordinary field is not refused as a key.
	if LooksLikeKey("3f9a0c1d2e4b5a6978c0d1e2f3a4b5c6d7e8f9a0") {
		t.Fatal("a commit id looks like a key")
	}
}

func TestIsEnvName(t *testing.T) {
	for v, want := range map[string]bool{"OPENAI_API_KEY": true, "_X": true, "a1": true, "1A": false, "A-B": false, "": false, openaiKey: false} {
		if IsEnvName(v) != want {
			t.Errorf("IsEnvName(%q) != %v", v, want)
		}
	}
}
