package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/secret"
)

const defaultOpenAIBaseURL = "https://api.openai.com/v1/"

type openAIProvider struct {
	cfg    Config
	client openai.Client
	name   string
}

func newOpenAI(cfg Config) (*openAIProvider, error) {
	base := cfg.BaseURL
	if base == "" {
		if cfg.Provider == OpenAICompatible {
			return nil, errors.New("providers: openai-compatible needs a base URL")
		}
		base = defaultOpenAIBaseURL
	}
	client := openai.NewClient(
		// Explicit base URL and key (even an empty one) so OPENAI_BASE_URL
		// and OPENAI_API_KEY from the environment can never redirect a
		// request or send the OpenAI key to a third-party server.
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(httpClient(cfg)),
		option.WithMaxRetries(0),
	)
	return &openAIProvider{cfg: cfg, client: client, name: cfg.Provider + " " + secret.URL(strings.TrimSuffix(base, "/"))}, nil
}

func (p *openAIProvider) Name() string { return p.name }

// isOpenAIReasoningModel reports models that take max_completion_tokens and
// reasoning_effort. Matching by prefix is a heuristic; Config.MaxTokensField
// overrides it for the token field.
func isOpenAIReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if m == p || strings.HasPrefix(m, p+"-") || strings.HasPrefix(m, p+".") {
			return true
		}
	}
	return false
}

func (p *openAIProvider) maxTokensField(model string) string {
	if p.cfg.MaxTokensField != "" {
		return p.cfg.MaxTokensField
	}
	if p.cfg.Provider == OpenAI && isOpenAIReasoningModel(model) {
		return MaxCompletionTokensField
	}
	return MaxTokensField
}

func (p *openAIProvider) params(req *llm.Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case llm.RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case llm.RoleAssistant:
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		default:
			return params, unknownRole(m.Role)
		}
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.TopP != nil {
		params.TopP = openai.Float(*req.TopP)
	}
	if req.MaxTokens > 0 {
		if p.maxTokensField(req.Model) == MaxCompletionTokensField {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.N > 1 {
		params.N = openai.Int(int64(req.N))
	}
	if len(req.Stop) > 0 {
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: req.Stop}
	}
	if req.Seed != nil {
		params.Seed = openai.Int(*req.Seed)
	}
	if req.Logprobs {
		params.Logprobs = openai.Bool(true)
	}
	// An explicit effort is the user's wish and is sent to any model (the
	// server rejects it where unsupported, which is better than silently
	// answering without it); a bare "thinking on" only means something to
	// reasoning models, which default to medium anyway.
	switch {
	case req.Thinking.Effort != "":
		params.ReasoningEffort = shared.ReasoningEffort(req.Thinking.Effort)
	case req.Thinking.Enabled && isOpenAIReasoningModel(req.Model):
		params.ReasoningEffort = shared.ReasoningEffortMedium
	}
	return params, nil
}

// openAIExtra sends Request.Extra as top-level body fields, sorted so the
// body is deterministic.
func openAIExtra(extra map[string]any) []option.RequestOption {
	var opts []option.RequestOption
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		opts = append(opts, option.WithJSONSet(escapeSJSON(k), extra[k]))
	}
	return opts
}

// escapeSJSON makes a field name literal in sjson's path syntax, where "."
// and friends would otherwise create nested objects.
func escapeSJSON(k string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "#", `\#`, "@", `\@`, "*", `\*`, ".", `\.`, ":", `\:`, "?", `\?`).Replace(k)
}

func (p *openAIProvider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	c := startCall(ctx, p.cfg.Timeout, llm.ReplyLimit(req, p.cfg.MaxReplyBytes))
	defer c.cancel()
	out, err := p.client.Chat.Completions.New(c.ctx, params, openAIExtra(req.Extra)...)
	if err != nil {
		return nil, c.classify(err, openAIFailure(err), &p.cfg)
	}
	if err := openAIReplyProblem(out, &p.cfg); err != nil {
		return nil, err
	}
	return c.withLimits(answer(p.response(req, out)))
}

// openAIReplyProblem finds a 200 that carries no answer: an error object in
// place of choices (some compatible servers and proxies), a choice whose
// finish reason is "error", or a null or missing content that is neither a
// refusal nor a cut-off. Such a reply is a failed call, retried within the
// bound, never journaled as an answer.
func openAIReplyProblem(out *openai.ChatCompletion, cfg *Config) error {
	if f, ok := out.JSON.ExtraFields["error"]; ok && f.Raw() != "null" {
		return &llm.Error{Kind: llm.Transient, Class: llm.ClassFailedReply,
			Msg: "the server answered 200 with an error: " + clip(redact(f.Raw(), cfg.APIKey))}
	}
	if len(out.Choices) == 0 {
		return &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply, Msg: "the reply has no choices"}
	}
	for i, ch := range out.Choices {
		if ch.FinishReason == "error" {
			return &llm.Error{Kind: llm.Transient, Class: llm.ClassFailedReply, Msg: fmt.Sprintf("choice %d finished with reason \"error\"", i+1)}
		}
		if !ch.Message.JSON.Content.Valid() && ch.Message.Refusal == "" && ch.FinishReason != "length" && ch.FinishReason != "content_filter" {
			return &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply,
				Msg: fmt.Sprintf("choice %d has null or missing content (finish reason %q)", i+1, ch.FinishReason)}
		}
	}
	return nil
}

func openAIFailure(err error) apiFailure {
	var ae *openai.Error
	if !errors.As(err, &ae) {
		return apiFailure{}
	}
	af := apiFailure{status: ae.StatusCode, msg: ae.Message, code: ae.Code}
	if af.code == "" {
		af.code = ae.Type
	}
	if af.msg == "" {
		// Compatible servers often answer {"detail": …} or plain text, which the
		// SDK leaves in the raw JSON rather than Message.
		af.msg = ae.RawJSON()
	}
	return af
}

func (p *openAIProvider) response(req *llm.Request, out *openai.ChatCompletion) *llm.Response {
	resp := &llm.Response{
		ModelVersion: out.Model,
		Usage: llm.Usage{
			PromptTokens:       int(out.Usage.PromptTokens),
			CompletionTokens:   int(out.Usage.CompletionTokens),
			CachedPromptTokens: int(out.Usage.PromptTokensDetails.CachedTokens),
			ThinkingTokens:     int(out.Usage.CompletionTokensDetails.ReasoningTokens),
		},
	}
	for _, ch := range out.Choices {
		c := llm.Choice{Text: ch.Message.Content, Thinking: reasoningText(ch.Message)}
		switch ch.FinishReason {
		case "stop":
			c.FinishReason = llm.FinishStop
		case "length":
			c.FinishReason = llm.FinishLength
		case "content_filter":
			c.FinishReason = llm.FinishBlocked
		default:
			c.FinishReason = llm.FinishOther
		}
		if c.Text == "" && ch.Message.Refusal != "" {
			// A refusal field is the model declining on policy grounds.
			c.Text, c.FinishReason = ch.Message.Refusal, llm.FinishBlocked
		}
		if req.Logprobs {
			c.Logprob = meanLogprob(ch.Logprobs.Content)
		}
		resp.Choices = append(resp.Choices, c)
	}
	return resp
}

// reasoningText picks up the visible reasoning that DeepSeek, vLLM, Together
// and Ollama return beside the answer; the SDK only knows them as extra fields.
func reasoningText(m openai.ChatCompletionMessage) string {
	for _, name := range []string{"reasoning_content", "reasoning"} {
		f, ok := m.JSON.ExtraFields[name]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func meanLogprob(toks []openai.ChatCompletionTokenLogprob) *float64 {
	if len(toks) == 0 {
		return nil
	}
	var sum float64
	for _, t := range toks {
		sum += t.Logprob
	}
	mean := sum / float64(len(toks))
	return &mean
}
