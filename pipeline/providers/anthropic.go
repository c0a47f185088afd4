package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/secret"
)

const (
	defaultAnthropicBaseURL = "https://api.anthropic.com/"
	// DefaultAnthropicMaxTokens is sent when a request sets no max_tokens:
	// the Messages API requires the field.
	DefaultAnthropicMaxTokens = 4096
	// DefaultThinkingBudget is the extended-thinking budget when a request
	// turns thinking on without a budget.
	DefaultThinkingBudget = 2048
	// MinThinkingBudget is the smallest budget the API accepts.
	MinThinkingBudget = 1024
)

type anthropicProvider struct {
	cfg    Config
	client anthropic.Client
	name   string
}

func newAnthropic(cfg Config) (*anthropicProvider, error) {
	base := cfg.BaseURL
	if base == "" {
		base = defaultAnthropicBaseURL
	}
	// The SDK refuses non-streaming calls it estimates could exceed 10
	// minutes (large max_tokens) unless a request timeout is set; any
	// explicit timeout disables that guess. Ours is enforced by context
	// anyway, so an hour only matters when Config.Timeout is 0.
	sdkTimeout := cfg.Timeout
	if sdkTimeout == 0 {
		sdkTimeout = time.Hour
	}
	client := anthropic.NewClient(
		// Our own key resolution only: no ANTHROPIC_* variables, profiles or
		// federation files picked up behind the config's back.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(httpClient(cfg)),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(sdkTimeout),
	)
	return &anthropicProvider{cfg: cfg, client: client, name: "anthropic " + secret.URL(strings.TrimSuffix(base, "/"))}, nil
}

func (p *anthropicProvider) Name() string { return p.name }

// HTTPRequests reports how many HTTP requests one Complete makes, so the
// transport can charge its requests-per-minute budget correctly: Anthropic
// has no n parameter and each sample is its own call.
func (p *anthropicProvider) HTTPRequests(req *llm.Request) int { return req.Samples() }

func (p *anthropicProvider) params(req *llm.Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(req.Model)}
	var system []string
	var turns []anthropic.MessageParam
	var texts []string // text of the last turn, merged on the way
	flush := func() {
		if len(turns) > 0 {
			turns[len(turns)-1].Content = []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(strings.Join(texts, "\n\n"))}
		}
	}
	for _, m := range req.Messages {
		var role anthropic.MessageParamRole
		switch m.Role {
		case llm.RoleSystem:
			system = append(system, m.Content)
			continue
		case llm.RoleUser:
			role = anthropic.MessageParamRoleUser
		case llm.RoleAssistant:
			role = anthropic.MessageParamRoleAssistant
		default:
			return params, unknownRole(m.Role)
		}
		// The API requires alternating roles; consecutive turns of one role
		// are the same speaker continuing, so they become one turn.
		if len(turns) > 0 && turns[len(turns)-1].Role == role {
			texts = append(texts, m.Content)
			continue
		}
		flush()
		turns = append(turns, anthropic.MessageParam{Role: role})
		texts = []string{m.Content}
	}
	flush()
	params.Messages = turns
	if len(system) > 0 {
		params.System = []anthropic.TextBlockParam{{Text: joinSystem(system)}}
	}

	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	if req.Thinking.Enabled {
		budget := req.Thinking.Budget
		if budget == 0 {
			budget = DefaultThinkingBudget
		}
		budget = max(budget, MinThinkingBudget)
		// max_tokens counts thinking too and must exceed the budget; when
		// it does not, the request's max_tokens is read as the answer's
		// allowance on top of the thinking.
		if maxTokens <= budget {
			maxTokens += budget
		}
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(budget))
		// With thinking on the API rejects temperature and top_p below 0.95.
		if req.TopP != nil && *req.TopP >= 0.95 {
			params.TopP = anthropic.Float(*req.TopP)
		}
	} else {
		if req.Temperature != nil {
			params.Temperature = anthropic.Float(*req.Temperature)
		}
		if req.TopP != nil {
			params.TopP = anthropic.Float(*req.TopP)
		}
	}
	if req.Thinking.Effort != "" {
		params.OutputConfig.Effort = anthropic.OutputConfigEffort(req.Thinking.Effort)
	}
	params.MaxTokens = int64(maxTokens)
	if len(req.Stop) > 0 {
		params.StopSequences = req.Stop
	}
	// Seed and logprobs have no Anthropic equivalent and are not sent.
	return params, nil
}

// Complete makes one call per requested sample, sequentially, and sums their
// usage; any failure fails the whole request (the transport retries it).
func (p *anthropicProvider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	resp := &llm.Response{}
	opts := anthropicExtra(req.Extra)
	// Each sample is its own HTTP request, so each gets one sample's bound.
	one := *req
	one.N = 0
	limit := llm.ReplyLimit(&one, p.cfg.MaxReplyBytes)
	for range req.Samples() {
		msg, rl, err := p.one(ctx, params, opts, limit)
		if err != nil {
			return nil, err
		}
		resp.RateLimits = rl // the last request's word is the newest
		resp.Choices = append(resp.Choices, anthropicChoice(msg))
		addAnthropicUsage(resp, msg)
	}
	return answer(resp)
}

// addAnthropicUsage adds one message's usage (one sample) to a response.
func addAnthropicUsage(resp *llm.Response, msg *anthropic.Message) {
	u := msg.Usage
	// input_tokens excludes cache reads and writes; adding them makes
	// PromptTokens the whole prompt, as OpenAI and Gemini report it.
	resp.Usage.PromptTokens += int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens)
	resp.Usage.CompletionTokens += int(u.OutputTokens)
	resp.Usage.CachedPromptTokens += int(u.CacheReadInputTokens)
	resp.Usage.ThinkingTokens += int(u.OutputTokensDetails.ThinkingTokens)
	resp.ModelVersion = string(msg.Model)
}

func (p *anthropicProvider) one(ctx context.Context, params anthropic.MessageNewParams, opts []option.RequestOption, limit int64) (*anthropic.Message, llm.RateLimits, error) {
	c := startCall(ctx, p.cfg.Timeout, limit)
	defer c.cancel()
	msg, err := p.client.Messages.New(c.ctx, params, opts...)
	if err != nil {
		return nil, llm.RateLimits{}, c.classify(err, anthropicFailure(err), &p.cfg)
	}
	if err := anthropicReplyProblem(msg, &p.cfg); err != nil {
		return nil, llm.RateLimits{}, err
	}
	return msg, c.limits(), nil
}

// anthropicReplyProblem finds a 200 that carries no message: an error
// object (type "error"), or a null or missing content list. An empty
// content list is an answer only when the model hit max_tokens or refused.
func anthropicReplyProblem(msg *anthropic.Message, cfg *Config) error {
	if t := msg.JSON.Type.Raw(); t != "" && t != `"message"` {
		detail := msg.RawJSON()
		return &llm.Error{Kind: llm.Transient, Class: llm.ClassFailedReply,
			Msg: "the server answered 200 with " + clip(redact(detail, cfg.APIKey))}
	}
	if !msg.JSON.Content.Valid() {
		return &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply, Msg: "the reply has null or missing content"}
	}
	if len(msg.Content) == 0 && msg.StopReason != anthropic.StopReasonMaxTokens && msg.StopReason != anthropic.StopReasonRefusal {
		return &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply, Msg: fmt.Sprintf("the reply has no content (stop reason %q)", msg.StopReason)}
	}
	return nil
}

func anthropicExtra(extra map[string]any) []option.RequestOption {
	var opts []option.RequestOption
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		opts = append(opts, option.WithJSONSet(escapeSJSON(k), extra[k]))
	}
	return opts
}

func anthropicFailure(err error) apiFailure {
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return apiFailure{}
	}
	af := apiFailure{status: ae.StatusCode, code: string(ae.Type())}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(ae.RawJSON()), &body) == nil && body.Error.Message != "" {
		af.msg = body.Error.Message
	} else {
		af.msg = ae.RawJSON()
	}
	return af
}

func anthropicChoice(msg *anthropic.Message) llm.Choice {
	var text, thinking []string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "thinking":
			thinking = append(thinking, b.Thinking)
		}
	}
	c := llm.Choice{Text: strings.Join(text, ""), Thinking: strings.Join(thinking, "\n\n")}
	switch msg.StopReason {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		c.FinishReason = llm.FinishStop
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		c.FinishReason = llm.FinishLength
	case anthropic.StopReasonRefusal:
		c.FinishReason = llm.FinishBlocked
	default:
		c.FinishReason = llm.FinishOther
	}
	return c
}
