// Package secret keeps credentials out of everything promoral writes: it
// recognises values that look like API keys (so a key pasted into a config
// field is refused without being echoed) and scrubs keys, credentials in
// URLs and authorization headers from text before it reaches a log, an
// error message, the journal or a Parquet file.
package secret

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a credential wherever one is removed.
const Mask = "[redacted]"

// Keys with a provider's well-known prefix. The length floors keep ordinary
// words ("sk-learn") from matching.
var prefixed = regexp.MustCompile(`\b(?:sk-ant-[A-Za-z0-9_\-]{16,}|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}|AIza[0-9A-Za-z_\-]{30,}|gsk_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,}|tgp_v1_[A-Za-z0-9_\-]{20,}|ghp_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`)

var (
	// A header or parameter that carries a credential, as servers echo them
	// back in error bodies ("Authorization: Bearer …", "x-api-key": "…",
	// api_key=…): the name stays, the value goes.
	named      = regexp.MustCompile(`(?i)((?:proxy-)?authorization|x-api-key|x-goog-api-key|api[_-]?key|access[_-]?token|client[_-]?secret|password)("?\s*[:=]\s*"?)((?:bearer|basic|token)\s+)?[^\s"',;}&\]]+`)
	bearer     = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/\-]{8,}=*`)
	userinfo   = regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s@"'<>]+@`)
	queryParam = regexp.MustCompile(`(?i)([?&](?:key|api[_-]?key|apikey|token|access[_-]?token|sig|signature|password)=)[^&\s"'#<>]+`)
)

// Redact removes credentials from s: keys with a known prefix, the values
// of authorization headers and key-like parameters, and the user
// information of URLs. Text without any is returned unchanged.
func Redact(s string) string {
	if s == "" {
		return s
	}
	s = prefixed.ReplaceAllString(s, Mask)
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	s = queryParam.ReplaceAllString(s, "${1}"+Mask)
	s = named.ReplaceAllStringFunc(s, func(m string) string {
		sub := named.FindStringSubmatch(m)
		head := sub[1] + sub[2] + sub[3]
		if strings.HasPrefix(m[len(head):], "[redacted") {
			return m // already masked by an earlier rule
		}
		return head + Mask
	})
	s = bearer.ReplaceAllStringFunc(s, func(m string) string {
		word, rest, _ := strings.Cut(m, " ")
		if strings.HasPrefix(strings.TrimSpace(rest), "[redacted") {
			return m
		}
		return word + " " + Mask
	})
	return s
}

// RedactKey removes one known key (and then anything else Redact finds).
// A provider calls it with the key it sent, which it knows for certain.
func RedactKey(s, key string) string {
	if len(key) >= 4 {
		s = strings.ReplaceAll(s, key, Mask)
	}
	return Redact(s)
}

// URL returns u without user information and without the values of
// key-like query parameters, for the manifest and messages.
func URL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return Redact(u)
	}
	if p.User != nil {
		p.User = url.User(Mask)
	}
	s := p.String()
	s = strings.Replace(s, url.PathEscape(Mask), Mask, 1)
	return queryParam.ReplaceAllString(s, "${1}"+Mask)
}

// LooksLikeKey reports whether a value looks like an API key rather than
// anything a config field should hold: a known key prefix, or a long
// random-looking token (mixed-case letters with digits, no separators).
// Environment variable names (OPENAI_API_KEY) and model ids do not match.
func LooksLikeKey(v string) bool {
	v = strings.TrimSpace(v)
	if prefixed.MatchString(v) && len(prefixed.FindString(v)) >= len(v)-2 {
		return true
	}
	if len(v) < 24 || strings.ContainsAny(v, " \t\n/:.") {
		return false
	}
	var lower, upper, digit, other bool
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		case r == '_' || r == '-':
		default:
			other = true
		}
	}
	if other {
		return false
	}
	// Model ids mix case and digits too, but always with separators
	// (Llama-3.1-70B-Instruct); a bare random token of this length is a key.
	return len(v) >= 30 && lower && upper && digit && !strings.ContainsAny(v, "-_")
}

// LooksLikeHexKey reports a long lowercase hex string: some providers'
// keys (Together's), but also hashes and commit ids, so it is only a key
// where a key is likely (key_env), not in any field.
func LooksLikeHexKey(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < 32 {
		return false
	}
	digit := false
	for _, r := range v {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'f':
		default:
			return false
		}
	}
	return digit
}

// IsEnvName reports whether v can name an environment variable.
func IsEnvName(v string) bool {
	if v == "" {
		return false
	}
	for i, r := range v {
		ok := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}
