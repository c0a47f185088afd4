package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/secret"
)

const defaultGeminiBaseURL = "https://generativelanguage.googleapis.com/"

type geminiProvider struct {
	cfg    Config
	client *genai.Client
	name   string
}

func newGemini(cfg Config) (*geminiProvider, error) {
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("providers: gemini needs an API key (%s)", keyName(&cfg))
	}
	base := cfg.BaseURL
	if base == "" {
		base = defaultGeminiBaseURL
	}
	one := int32(1)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: cfg.APIKey,
		// Explicit backend: GOOGLE_GENAI_USE_VERTEXAI in the environment
		// would otherwise switch to Vertex and its credentials.
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: httpClient(cfg),
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    base,
			APIVersion: "v1beta",
			// No retry options means one attempt today; saying so explicitly
			// keeps it that way if the SDK's default ever changes.
			RetryOptions: &genai.HTTPRetryOptions{Attempts: &one},
		},
	})
	if err != nil {
		// The SDK prints its whole config (key included) into some errors.
		return nil, fmt.Errorf("providers: gemini client: %s", redact(err.Error(), cfg.APIKey))
	}
	return &geminiProvider{cfg: cfg, client: client, name: "gemini " + secret.URL(strings.TrimSuffix(base, "/"))}, nil
}

func (p *geminiProvider) Name() string { return p.name }

func (p *geminiProvider) request(req *llm.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	off := false
	gc := &genai.GenerateContentConfig{
		// GenerateContent otherwise re-sends the request on its own while the
		// reply carries a continuation token: hidden, unjournaled attempts.
		AutomaticContinuation: &off,
	}
	var system []string
	var contents []*genai.Content
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			system = append(system, m.Content)
		case llm.RoleUser:
			contents = append(contents, genai.NewContentFromText(m.Content, genai.RoleUser))
		case llm.RoleAssistant:
			contents = append(contents, genai.NewContentFromText(m.Content, genai.RoleModel))
		default:
			return nil, nil, unknownRole(m.Role)
		}
	}
	if len(system) > 0 {
		gc.SystemInstruction = genai.NewContentFromText(joinSystem(system), genai.RoleUser)
	}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		gc.Temperature = &t
	}
	if req.TopP != nil {
		t := float32(*req.TopP)
		gc.TopP = &t
	}
	if req.MaxTokens > 0 {
		gc.MaxOutputTokens = int32(min(req.MaxTokens, math.MaxInt32))
	}
	if req.N > 1 {
		gc.CandidateCount = int32(min(req.N, math.MaxInt32))
	}
	if len(req.Stop) > 0 {
		gc.StopSequences = req.Stop
	}
	if req.Seed != nil {
		// Truncating would silently send a different seed than the one the
		// cache key records.
		if *req.Seed < math.MinInt32 || *req.Seed > math.MaxInt32 {
			return nil, nil, &llm.Error{Kind: llm.Permanent, Msg: fmt.Sprintf("seed %d does not fit Gemini's int32 seed", *req.Seed)}
		}
		s := int32(*req.Seed)
		gc.Seed = &s
	}
	if req.Logprobs {
		gc.ResponseLogprobs = true
	}
	// Thinking off (the zero value) sends nothing: each model keeps its own
	// default (2.5 Flash thinks unless told thinkingBudget 0, which Extra can
	// send; 2.5 Pro cannot turn it off). The API rejects a level and a budget
	// together, so an effort wins over a budget.
	switch {
	case req.Thinking.Effort != "":
		gc.ThinkingConfig = &genai.ThinkingConfig{IncludeThoughts: true, ThinkingLevel: genai.ThinkingLevel(strings.ToUpper(req.Thinking.Effort))}
	case req.Thinking.Enabled:
		budget := int32(-1) // dynamic: the model decides
		if req.Thinking.Budget > 0 {
			budget = int32(min(req.Thinking.Budget, math.MaxInt32))
		}
		gc.ThinkingConfig = &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: &budget}
	}
	if len(req.Extra) > 0 {
		// Extra is merged into the REST body as written in YAML, e.g.
		// {safetySettings: […]} or {generationConfig: {topK: 40}}.
		gc.HTTPOptions = &genai.HTTPOptions{ExtraBody: req.Extra}
	}
	return contents, gc, nil
}

func (p *geminiProvider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	contents, gc, err := p.request(req)
	if err != nil {
		return nil, err
	}
	c := startCall(ctx, p.cfg.Timeout, llm.ReplyLimit(req, p.cfg.MaxReplyBytes))
	defer c.cancel()
	out, err := p.client.Models.GenerateContent(c.ctx, req.Model, contents, gc)
	if err != nil {
		return nil, c.classify(err, geminiFailure(err), &p.cfg)
	}
	if err := geminiReplyProblem(out); err != nil {
		return nil, err
	}
	return c.withLimits(answer(geminiResponse(req, out)))
}

// geminiReplyProblem finds a 200 without an answer: no candidates although
// the prompt was not blocked, or a candidate that ended without content for
// a reason that is neither a cut-off nor a filter (OTHER, a malformed call,
// no reason at all).
func geminiReplyProblem(out *genai.GenerateContentResponse) error {
	if pf := out.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return nil // a refusal of the prompt: an outcome, recorded as blocked
	}
	if len(out.Candidates) == 0 {
		return &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply, Msg: "the reply has no candidates"}
	}
	for i, cand := range out.Candidates {
		if cand == nil {
			return &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply, Msg: fmt.Sprintf("candidate %d is null", i+1)}
		}
		if cand.FinishReason == genai.FinishReasonMaxTokens || geminiBlocked[cand.FinishReason] {
			continue
		}
		hasText := false
		if cand.Content != nil {
			for _, part := range cand.Content.Parts {
				if part != nil && part.Text != "" && !part.Thought {
					hasText = true
				}
			}
		}
		if !hasText {
			class := llm.ClassEmptyReply
			if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonStop {
				class = llm.ClassFailedReply
			}
			return &llm.Error{Kind: llm.Transient, Class: class,
				Msg: fmt.Sprintf("candidate %d has no content (finish reason %q)", i+1, cand.FinishReason)}
		}
	}
	return nil
}

func geminiFailure(err error) apiFailure {
	var ae genai.APIError
	if !errors.As(err, &ae) {
		var pae *genai.APIError
		if !errors.As(err, &pae) {
			return apiFailure{}
		}
		ae = *pae
	}
	af := apiFailure{status: ae.Code, msg: ae.Message, code: ae.Status}
	// 429s say when to come back in a google.rpc.RetryInfo detail, not a header.
	for _, d := range ae.Details {
		if t, _ := d["@type"].(string); strings.HasSuffix(t, "google.rpc.RetryInfo") {
			if s, ok := d["retryDelay"].(string); ok {
				if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
					af.retryAfter = dur
				}
			}
		}
	}
	return af
}

// geminiBlocked lists finish reasons that mean a filter stopped the answer.
// RECITATION is Google's copyright filter: also a block, not a model choice.
var geminiBlocked = map[genai.FinishReason]bool{
	genai.FinishReasonSafety:                 true,
	genai.FinishReasonProhibitedContent:      true,
	genai.FinishReasonBlocklist:              true,
	genai.FinishReasonSPII:                   true,
	genai.FinishReasonRecitation:             true,
	genai.FinishReasonImageSafety:            true,
	genai.FinishReasonImageProhibitedContent: true,
}

// geminiSafety is the audit record kept in Response.SafetyInfo: the API's own
// fields, verbatim, for the prompt and for every blocked candidate.
type geminiSafety struct {
	PromptFeedback *genai.GenerateContentResponsePromptFeedback `json:"promptFeedback,omitempty"`
	Candidates     []geminiCandidateSafety                      `json:"candidates,omitempty"`
}

type geminiCandidateSafety struct {
	Index         int32                 `json:"index"`
	FinishReason  genai.FinishReason    `json:"finishReason"`
	FinishMessage string                `json:"finishMessage,omitempty"`
	SafetyRatings []*genai.SafetyRating `json:"safetyRatings,omitempty"`
}

func geminiResponse(req *llm.Request, out *genai.GenerateContentResponse) *llm.Response {
	resp := &llm.Response{ModelVersion: out.ModelVersion}
	if u := out.UsageMetadata; u != nil {
		resp.Usage = llm.Usage{
			PromptTokens: int(u.PromptTokenCount),
			// Gemini counts thoughts apart from the answer; OpenAI and
			// Anthropic include them in completion tokens (and bill them as
			// output), so we do too.
			CompletionTokens:   int(u.CandidatesTokenCount + u.ThoughtsTokenCount),
			CachedPromptTokens: int(u.CachedContentTokenCount),
			ThinkingTokens:     int(u.ThoughtsTokenCount),
		}
	}
	var safety geminiSafety
	if pf := out.PromptFeedback; pf != nil && pf.BlockReason != "" {
		// A blocked prompt has no candidates: record one blocked choice per
		// requested sample so the engine sees the refusal, not a failure.
		safety.PromptFeedback = pf
		for range req.Samples() {
			resp.Choices = append(resp.Choices, llm.Choice{FinishReason: llm.FinishBlocked})
		}
	}
	for _, cand := range out.Candidates {
		if cand == nil {
			continue
		}
		var text, thought []string
		if cand.Content != nil {
			for _, part := range cand.Content.Parts {
				if part == nil || part.Text == "" {
					continue
				}
				if part.Thought {
					thought = append(thought, part.Text)
				} else {
					text = append(text, part.Text)
				}
			}
		}
		c := llm.Choice{Text: strings.Join(text, ""), Thinking: strings.Join(thought, "")}
		switch {
		case cand.FinishReason == genai.FinishReasonStop:
			c.FinishReason = llm.FinishStop
		case cand.FinishReason == genai.FinishReasonMaxTokens:
			c.FinishReason = llm.FinishLength
		case geminiBlocked[cand.FinishReason]:
			c.FinishReason = llm.FinishBlocked
			safety.Candidates = append(safety.Candidates, geminiCandidateSafety{
				Index: cand.Index, FinishReason: cand.FinishReason, FinishMessage: cand.FinishMessage, SafetyRatings: cand.SafetyRatings,
			})
		default:
			c.FinishReason = llm.FinishOther
		}
		if req.Logprobs && (cand.AvgLogprobs != 0 || cand.LogprobsResult != nil) {
			lp := cand.AvgLogprobs
			c.Logprob = &lp
		}
		resp.Choices = append(resp.Choices, c)
	}
	if safety.PromptFeedback != nil || len(safety.Candidates) > 0 {
		if b, err := json.Marshal(safety); err == nil {
			resp.SafetyInfo = string(b)
		}
	}
	return resp
}
