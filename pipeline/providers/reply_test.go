package providers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// A 200 is not yet an answer: every provider turns a reply without one into
// an error of that call (retried by the transport, never journaled as a
// success), while a cut-off or a refusal stays an answer.
func TestRepliesWithoutAnAnswerAreErrors(t *testing.T) {
	type bad struct{ name, body, class string }
	cases := map[string][]bad{
		OpenAI: {
			{"no choices", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`, llm.ClassEmptyReply},
			{"choices null", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":null}`, llm.ClassEmptyReply},
			{"null content", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}`, llm.ClassEmptyReply},
			{"missing content", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant"},"finish_reason":"stop"}]}`, llm.ClassEmptyReply},
			{"empty content", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`, llm.ClassEmptyReply},
			{"error object", `{"error":{"message":"upstream model crashed","code":502}}`, llm.ClassFailedReply},
			{"finish reason error", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"partial"},"finish_reason":"error"}]}`, llm.ClassFailedReply},
		},
		Anthropic: {
			{"error type", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.ClassFailedReply},
			{"null content", `{"id":"m","type":"message","role":"assistant","model":"c","content":null,"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":0}}`, llm.ClassEmptyReply},
			{"empty content", `{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":0}}`, llm.ClassEmptyReply},
		},
		Gemini: {
			{"no candidates", `{"candidates":[],"usageMetadata":{"promptTokenCount":3}}`, llm.ClassEmptyReply},
			{"no content", `{"candidates":[{"finishReason":"STOP","index":0}]}`, llm.ClassEmptyReply},
			{"other", `{"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"OTHER","index":0}]}`, llm.ClassFailedReply},
			{"thought only", `{"candidates":[{"content":{"role":"model","parts":[{"text":"hmm","thought":true}]},"finishReason":"STOP","index":0}]}`, llm.ClassEmptyReply},
		},
	}
	for _, d := range dialects {
		for _, c := range cases[d.provider] {
			t.Run(d.provider+"/"+c.name, func(t *testing.T) {
				wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, c.body) })
				resp, err := d.newProvider(t, wr.srv.URL, 5*time.Second).Complete(context.Background(), simpleReq(d.model))
				if err == nil {
					t.Fatalf("accepted as a reply: %+v", resp)
				}
				e := asLLMError(t, err)
				if e.Kind != llm.Transient || e.ClassName() != c.class || e.StopsModel() {
					t.Fatalf("kind %v class %q stops %v (%v); want transient %q", e.Kind, e.ClassName(), e.StopsModel(), err, c.class)
				}
			})
		}
	}
}

// A cut-off or a refusal with no text is an answer the metrics count.
func TestCutOffsAndRefusalsAreAnswers(t *testing.T) {
	bodies := map[string]string{
		OpenAI:    `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"length"}]}`,
		Anthropic: `{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}`,
		Gemini:    `{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking","thought":true}]},"finishReason":"MAX_TOKENS","index":0}]}`,
	}
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, bodies[d.provider]) })
			resp, err := d.newProvider(t, wr.srv.URL, 5*time.Second).Complete(context.Background(), simpleReq(d.model))
			if err != nil {
				t.Fatal(err)
			}
			if p := resp.Problem(); p != "" {
				t.Fatalf("the engine would reject it: %s", p)
			}
		})
	}
}

// The reply bound holds on the HTTP body for every provider, whether the
// server announces the length or streams it chunked, and is a failure of
// that request only (not retried, does not stop the model).
func TestReplyOverItsBoundFailsTheCall(t *testing.T) {
	const limit = 4096
	for _, d := range dialects {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/chunked=%v", d.provider, chunked), func(t *testing.T) {
				big := strings.Replace(d.ok, "hello there", strings.Repeat("x", 64<<10), 1)
				wr := newWire(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					if !chunked {
						w.Header().Set("Content-Length", fmt.Sprint(len(big)))
					}
					w.WriteHeader(200)
					for i := 0; i < len(big); i += 1000 {
						w.Write([]byte(big[i:min(i+1000, len(big))]))
						if chunked {
							w.(http.Flusher).Flush()
						}
					}
				})
				p, err := New(Config{Provider: d.provider, BaseURL: d.base(wr.srv.URL), APIKey: testKey, Timeout: 5 * time.Second, MaxReplyBytes: limit})
				if err != nil {
					t.Fatal(err)
				}
				_, err = p.Complete(context.Background(), simpleReq(d.model))
				if err == nil {
					t.Fatal("a 64 KiB reply passed a 4 KiB bound")
				}
				e := asLLMError(t, err)
				if e.ClassName() != llm.ClassTooLarge || e.Kind != llm.Permanent || e.StopsModel() {
					t.Fatalf("class %q kind %v stops %v: %v", e.ClassName(), e.Kind, e.StopsModel(), err)
				}
				// The same reply within the default bound (from max_tokens) is fine.
				small := strings.Replace(d.ok, "hello there", strings.Repeat("y", 2000), 1)
				wr2 := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, small) })
				if _, err := d.newProvider(t, wr2.srv.URL, 5*time.Second).Complete(context.Background(), simpleReq(d.model)); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestReplyLimitFollowsTheRequest(t *testing.T) {
	base := llm.ReplyLimit(&llm.Request{MaxTokens: 1000}, 0)
	if base != 256<<10+32*1000 {
		t.Fatalf("limit for 1000 tokens = %d", base)
	}
	if l := llm.ReplyLimit(&llm.Request{MaxTokens: 1000, N: 4}, 0); l != 256<<10+4*32*1000 {
		t.Errorf("4 samples: %d", l)
	}
	if l := llm.ReplyLimit(&llm.Request{}, 0); l != 256<<10+32*llm.DefaultReplyTokens {
		t.Errorf("no max_tokens: %d", l)
	}
	if l := llm.ReplyLimit(&llm.Request{MaxTokens: 1000}, 77); l != 77 {
		t.Errorf("set: %d", l)
	}
}

// A quota exhausted is an account's problem: it stops the model, whichever
// way the provider says it.
func TestQuotaStopsTheModel(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 400, d.errBody(400, "Your credit balance is too low to access the API."))
			})
			_, err := d.newProvider(t, wr.srv.URL, 5*time.Second).Complete(context.Background(), simpleReq(d.model))
			if e := asLLMError(t, err); e.ClassName() != llm.ClassQuota || !e.StopsModel() {
				t.Fatalf("class %q: %v", e.ClassName(), err)
			}
		})
	}
}
