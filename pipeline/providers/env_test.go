package providers

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDefaultKeyVar(t *testing.T) {
	cases := []struct{ provider, base, want string }{
		{OpenAI, "", "OPENAI_API_KEY"},
		{OpenAI, "https://api.openai.com/v1", "OPENAI_API_KEY"},
		{Anthropic, "", "ANTHROPIC_API_KEY"},
		{Gemini, "", "GOOGLE_API_KEY"},
		{OpenAICompatible, "https://api.together.xyz/v1", "TOGETHER_API_KEY"},
		{OpenAICompatible, "https://api.cohere.ai/compatibility/v1", "COHERE_API_KEY"},
		{OpenAICompatible, "https://api.deepseek.com", "DEEPSEEK_API_KEY"},
		{OpenAI, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"},
		{OpenAICompatible, "http://localhost:11434/v1", ""},
		{OpenAICompatible, "http://127.0.0.1:8000/v1", ""},
		{OpenAI, "http://localhost:8080/v1", ""},
		{OpenAICompatible, "https://api.openai.com/v1", "OPENAI_API_KEY"},
		// Never guess OPENAI_API_KEY for somebody else's server.
		{OpenAICompatible, "https://llm.example.org/v1", ""},
	}
	for _, tc := range cases {
		if got := DefaultKeyVar(tc.provider, tc.base); got != tc.want {
			t.Errorf("DefaultKeyVar(%q, %q) = %q, want %q", tc.provider, tc.base, got, tc.want)
		}
	}
}

func TestLookupKey(t *testing.T) {
	t.Setenv("PROMORAL_T_SET", "from-env")
	t.Setenv("PROMORAL_T_EMPTY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	dotenv := map[string]string{"PROMORAL_T_SET": "from-file", "PROMORAL_T_FILE": "file-only", "PROMORAL_T_EMPTY": "file-fills-empty"}

	check := func(name, want string, wantOK bool) {
		t.Helper()
		got, ok := LookupKey(name, dotenv)
		if got != want || ok != wantOK {
			t.Errorf("LookupKey(%q) = %q, %v; want %q, %v", name, got, ok, want, wantOK)
		}
	}
	check("PROMORAL_T_SET", "from-env", true) // the shell wins over the file
	check("PROMORAL_T_FILE", "file-only", true)
	check("PROMORAL_T_EMPTY", "file-fills-empty", true)
	check("PROMORAL_T_MISSING", "", false)
	check("", "", false)

	check("GOOGLE_API_KEY", "", false)
	dotenv["GEMINI_API_KEY"] = "gemini-from-file"
	check("GOOGLE_API_KEY", "gemini-from-file", true)
	t.Setenv("GOOGLE_API_KEY", "google-from-env")
	check("GOOGLE_API_KEY", "google-from-env", true)
}

func TestParseDotEnv(t *testing.T) {
	src := "\ufeff# comment\n" +
		"\n" +
		"PLAIN=abc\n" +
		"export EXPORTED=yes\n" +
		"  SPACED  =  padded value  \n" +
		"DQ=\"two words # not a comment\"\n" +
		"ESC=\"line1\\nline2 \\\"q\\\" back\\\\slash\"\n" +
		"SQ='literal \\n $HOME'\n" +
		"INLINE=value # trailing comment\n" +
		"HASH=pa#ss\n" +
		"EMPTY=\n" +
		"EQ=a=b=c\n" +
		"exporter=not-a-prefix\n" +
		"DQ_COMMENT=\"x\" # ok\n"
	got, err := ParseDotEnv(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"PLAIN": "abc", "EXPORTED": "yes", "SPACED": "padded value", "DQ": "two words # not a comment",
		"ESC": "line1\nline2 \"q\" back\\slash", "SQ": `literal \n $HOME`, "INLINE": "value", "HASH": "pa#ss",
		"EMPTY": "", "EQ": "a=b=c", "exporter": "not-a-prefix", "DQ_COMMENT": "x",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestParseDotEnvErrorsDoNotLeakValues(t *testing.T) {
	for _, src := range []string{
		"GOOD=1\nsk-secret-value-no-equals\n",
		"KEY=\"sk-secret-value-unterminated\n",
		"KEY='sk-secret-value-unterminated\n",
		"KEY=\"sk-secret-value\" trailing\n",
		"1BAD=sk-secret-value\n",
	} {
		_, err := ParseDotEnv(strings.NewReader(src))
		if err == nil {
			t.Errorf("%q: no error", src)
			continue
		}
		if strings.Contains(err.Error(), "sk-secret-value") {
			t.Errorf("error leaks the value: %v", err)
		}
		if !strings.Contains(err.Error(), "line ") {
			t.Errorf("error does not name the line: %v", err)
		}
	}
}

func TestLoadDotEnv(t *testing.T) {
	dir := t.TempDir()
	m, err := LoadDotEnv(filepath.Join(dir, "missing.env"))
	if err != nil || len(m) != 0 {
		t.Fatalf("missing file: %v, %v", m, err)
	}
	path := filepath.Join(dir, ".env")
	if err := os.WriteFile(path, []byte("export PROMORAL_T_DOT=from-dotenv\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err = LoadDotEnv(path)
	if err != nil || m["PROMORAL_T_DOT"] != "from-dotenv" {
		t.Fatalf("got %v, %v", m, err)
	}
	if _, set := os.LookupEnv("PROMORAL_T_DOT"); set {
		t.Fatal("LoadDotEnv changed the process environment")
	}
}

// FuzzParseDotEnv: any .env content parses or fails without a panic, and a
// failure names the line and variable but never repeats a value.
func FuzzParseDotEnv(f *testing.F) {
	for _, s := range []string{"", "A=1\n", "export OPENAI_API_KEY=sk-abc # c\n", "K='unterminated\n", `K="a\"b" trailing` + "\n",
		"\ufeffX=1\n#c\n\nY=\"multi\\nline\"\n", "=novalue\n", "BAD NAME=x\n", "K=\"sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8\" junk\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		m, err := ParseDotEnv(strings.NewReader(data))
		if err == nil {
			for k := range m {
				if !validEnvName(k) {
					t.Fatalf("parsed an invalid name %q", k)
				}
			}
			return
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "line ") {
			t.Fatalf("error does not name the line: %q", msg)
		}
		for _, line := range strings.Split(data, "\n") {
			_, v, ok := strings.Cut(line, "=")
			v = strings.TrimSpace(v)
			if ok && len(v) >= 12 && strings.Contains(msg, v) {
				t.Fatalf("error %q repeats the value %q", msg, v)
			}
		}
	})
}
