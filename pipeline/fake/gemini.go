package fake

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type gemContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text string `json:"text"`
	} `json:"parts"`
}

type gemRequest struct {
	Model             string       `json:"model"`
	Contents          []gemContent `json:"contents"`
	SystemInstruction *gemContent  `json:"systemInstruction"`
	GenerationConfig  struct {
		CandidateCount  int `json:"candidateCount"`
		MaxOutputTokens int `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

func (q *gemRequest) call(model string) Call {
	c := Call{Model: strings.TrimPrefix(model, "models/"), N: q.GenerationConfig.CandidateCount, MaxTokens: q.GenerationConfig.MaxOutputTokens}
	join := func(g *gemContent) string {
		var b strings.Builder
		for _, p := range g.Parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	if q.SystemInstruction != nil {
		c.Messages = append(c.Messages, Message{Role: "system", Text: join(q.SystemInstruction)})
	}
	for i := range q.Contents {
		role := q.Contents[i].Role
		if role == "model" {
			role = "assistant"
		}
		c.Messages = append(c.Messages, Message{Role: role, Text: join(&q.Contents[i])})
	}
	return c
}

func gemResponse(c Call, texts []string) map[string]any {
	var cands []map[string]any
	completion := 0
	for i, t := range texts {
		cands = append(cands, map[string]any{"index": i, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []map[string]any{{"text": t}}}})
		completion += tokens(t)
	}
	p := promptTokens(c)
	return map[string]any{"candidates": cands, "modelVersion": c.Model + "-fake",
		"usageMetadata": map[string]any{"promptTokenCount": p, "candidatesTokenCount": completion, "totalTokenCount": p + completion}}
}

func gemError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": http.StatusText(status)}})
}

func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/v1beta/")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":generateContent"):
		var q gemRequest
		if err := readJSON(r, &q); err != nil {
			gemError(w, 400, "bad json")
			return
		}
		c := q.call(strings.TrimSuffix(path, ":generateContent"))
		s.mu.Lock()
		s.live++
		s.mu.Unlock()
		writeJSON(w, 200, gemResponse(c, s.answer(c)))
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":batchGenerateContent"):
		s.gemCreate(w, r, strings.TrimSuffix(path, ":batchGenerateContent"))
	case r.Method == http.MethodGet && path == "batches":
		s.gemList(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "batches/") && strings.HasSuffix(path, ":cancel"):
		id := strings.TrimSuffix(path, ":cancel")
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.jobs[id]
		if j == nil {
			gemError(w, 404, "no such batch")
			return
		}
		if j.phase < len(phases)-1 {
			j.cancelled = true
		}
		writeJSON(w, 200, map[string]any{})
	case r.Method == http.MethodGet && strings.HasPrefix(path, "batches/"):
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.jobs[path]
		if j == nil {
			gemError(w, 404, "no such batch")
			return
		}
		s.advance(j)
		writeJSON(w, 200, s.gemOperation(j))
	default:
		gemError(w, 404, "unknown path "+r.URL.Path)
	}
}

func (s *Server) gemCreate(w http.ResponseWriter, r *http.Request, model string) {
	if s.RateLimitCreates.Add(-1) >= 0 {
		gemError(w, 429, "too many batches")
		return
	}
	var q struct {
		Batch struct {
			DisplayName string `json:"displayName"`
			InputConfig struct {
				Requests struct {
					Requests []struct {
						Request  gemRequest        `json:"request"`
						Metadata map[string]string `json:"metadata"`
					} `json:"requests"`
				} `json:"requests"`
			} `json:"inputConfig"`
		} `json:"batch"`
	}
	if err := readJSON(r, &q); err != nil || len(q.Batch.InputConfig.Requests.Requests) == 0 {
		gemError(w, 400, "bad batch")
		return
	}
	var calls []Call
	var ids []string
	for _, rq := range q.Batch.InputConfig.Requests.Requests {
		calls = append(calls, rq.Request.call(model))
		ids = append(ids, rq.Metadata["key"])
	}
	s.mu.Lock()
	j := s.addJob("batches/", q.Batch.DisplayName, model, calls, ids)
	body := s.gemOperation(j)
	s.mu.Unlock()
	if s.BeforeCreateReply != nil {
		s.BeforeCreateReply(j.id)
	}
	writeJSON(w, 200, body)
}

func (s *Server) gemList(w http.ResponseWriter, r *http.Request) {
	size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
	if size <= 0 {
		size = 20
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("pageToken"))
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.newestFirst()
	end := min(start+size, len(all))
	ops := []map[string]any{}
	for _, j := range all[min(start, end):end] {
		ops = append(ops, s.gemOperation(j))
	}
	resp := map[string]any{"operations": ops}
	if end < len(all) {
		resp["nextPageToken"] = strconv.Itoa(end)
	}
	writeJSON(w, 200, resp)
}

var gemStates = map[string]string{
	"validating": "BATCH_STATE_PENDING", "in_progress": "BATCH_STATE_RUNNING", "finalizing": "BATCH_STATE_RUNNING",
	"cancelling": "BATCH_STATE_RUNNING", "completed": "BATCH_STATE_SUCCEEDED", "expired": "BATCH_STATE_EXPIRED",
	"cancelled": "BATCH_STATE_CANCELLED", "failed": "BATCH_STATE_FAILED",
}

// grpcCode maps an HTTP-like status to the google.rpc code a batch line's
// error carries.
func grpcCode(status int) int {
	switch {
	case status == 429:
		return 8 // RESOURCE_EXHAUSTED
	case status >= 500:
		return 13 // INTERNAL
	default:
		return 3 // INVALID_ARGUMENT
	}
}

func (s *Server) gemOperation(j *job) map[string]any {
	md := map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
		"model": "models/" + j.model, "displayName": j.name, "state": gemStates[s.phaseName(j)],
		"createTime": j.created.Format(time.RFC3339Nano), "updateTime": time.Now().UTC().Format(time.RFC3339Nano),
		"batchStats": map[string]any{"requestCount": fmt.Sprint(j.total)}}
	op := map[string]any{"name": j.id, "metadata": md}
	if j.phase == len(phases)-1 {
		op["done"] = true
		md["endTime"] = j.ended.Format(time.RFC3339Nano)
		var resps []map[string]any
		for _, o := range j.outcomes {
			meta := map[string]string{"key": o.id}
			switch {
			case o.state != "":
				// Lines an expired or cancelled job never ran are absent.
			case o.status != 0:
				resps = append(resps, map[string]any{"error": map[string]any{"code": grpcCode(o.status), "message": o.msg}, "metadata": meta})
			default:
				resps = append(resps, map[string]any{"response": gemResponse(o.call, o.texts), "metadata": meta})
			}
		}
		if len(resps) > 0 {
			md["output"] = map[string]any{"inlinedResponses": map[string]any{"inlinedResponses": resps}}
		}
		if s.phaseName(j) == "failed" {
			op["error"] = map[string]any{"code": 3, "message": "the fake failed this batch"}
		}
	}
	return op
}
