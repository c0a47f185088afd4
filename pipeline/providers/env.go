package providers

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// DefaultKeyVar names the environment variable holding the key for a provider
// at a base URL, or "" when none is needed (servers on this machine) or none
// can be guessed. An OpenAI-compatible server at an unknown host gets "" on
// purpose: defaulting to OPENAI_API_KEY would send the OpenAI key to a third
// party; such configs must name their variable.
func DefaultKeyVar(provider, baseURL string) string {
	if baseURL != "" && IsLocalHost(baseURL) {
		return ""
	}
	host := hostOf(baseURL)
	switch {
	case strings.Contains(host, "together"):
		return "TOGETHER_API_KEY"
	case strings.Contains(host, "cohere"):
		return "COHERE_API_KEY"
	case strings.Contains(host, "deepseek"):
		return "DEEPSEEK_API_KEY"
	case host == "openai.com" || strings.HasSuffix(host, ".openai.com"):
		return "OPENAI_API_KEY"
	}
	switch provider {
	case OpenAI:
		return "OPENAI_API_KEY"
	case Anthropic:
		return "ANTHROPIC_API_KEY"
	case Gemini:
		// GEMINI_API_KEY is accepted too, see LookupKey.
		return "GOOGLE_API_KEY"
	}
	return ""
}

// LookupKey finds a key: the process environment first, then the .env
// values, so a variable exported in the shell always beats the file.
// GOOGLE_API_KEY falls back to GEMINI_API_KEY, the other name Google
// documents. Empty values count as unset.
func LookupKey(name string, dotenv map[string]string) (string, bool) {
	if name == "" {
		return "", false
	}
	if v, ok := lookup1(name, dotenv); ok {
		return v, true
	}
	if name == "GOOGLE_API_KEY" {
		return lookup1("GEMINI_API_KEY", dotenv)
	}
	return "", false
}

func lookup1(name string, dotenv map[string]string) (string, bool) {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v, true
	}
	if v := strings.TrimSpace(dotenv[name]); v != "" {
		return v, true
	}
	return "", false
}

// LoadDotEnv reads a .env file into a map; a missing file is an empty map.
// It never touches the process environment: LookupKey consults both, with
// the environment winning, which is what "never override" means here.
func LoadDotEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := ParseDotEnv(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseDotEnv parses KEY=VALUE lines: blank lines and # comments are skipped,
// an "export " prefix is allowed, values may be 'single-quoted' (literal),
// "double-quoted" (with \n, \t, \" and \\ escapes) or bare (a " #" starts a
// comment). Errors name the line, never its value, which may be a key.
func ParseDotEnv(r io.Reader) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			line = strings.TrimSpace(rest)
		}
		name, raw, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || !validEnvName(name) {
			return nil, fmt.Errorf("line %d: want NAME=value", n)
		}
		val, err := dotEnvValue(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", n, name, err)
		}
		m[name] = val
	}
	return m, sc.Err()
}

func validEnvName(s string) bool {
	for i, r := range s {
		ok := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') ||
			(i > 0 && (r == '.' || (r >= '0' && r <= '9')))
		if !ok {
			return false
		}
	}
	return s != ""
}

func dotEnvValue(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	switch raw[0] {
	case '\'':
		end := strings.IndexByte(raw[1:], '\'')
		if end < 0 {
			return "", errors.New("unterminated single quote")
		}
		return raw[1 : 1+end], trailing(raw[2+end:])
	case '"':
		var b strings.Builder
		for i := 1; i < len(raw); i++ {
			c := raw[i]
			switch {
			case c == '"':
				return b.String(), trailing(raw[i+1:])
			case c == '\\' && i+1 < len(raw):
				i++
				switch raw[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(raw[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", errors.New("unterminated double quote")
	}
	// Bare values: " #" or "\t#" starts a comment, a "#" inside (as in a URL
	// fragment or a password) does not.
	for i := 1; i < len(raw); i++ {
		if raw[i] == '#' && (raw[i-1] == ' ' || raw[i-1] == '\t') {
			raw = raw[:i]
			break
		}
	}
	return strings.TrimSpace(raw), nil
}

// trailing accepts only whitespace or a comment after a closing quote.
func trailing(s string) error {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "#") {
		return nil
	}
	return errors.New("text after closing quote")
}
