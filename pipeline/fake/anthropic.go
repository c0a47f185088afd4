package fake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

type antParams struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (q *antParams) call() Call {
	c := Call{Model: q.Model, MaxTokens: q.MaxTokens}
	if len(q.System) > 0 {
		c.Messages = append(c.Messages, Message{Role: "system", Text: textOf(q.System)})
	}
	for _, m := range q.Messages {
		c.Messages = append(c.Messages, Message{Role: m.Role, Text: textOf(m.Content)})
	}
	return c
}

func antMessage(c Call, text string) map[string]any {
	return map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": c.Model + "-fake",
		"content": []map[string]any{{"type": "text", "text": text}}, "stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": promptTokens(c), "output_tokens": tokens(text)}}
}

func antError(w http.ResponseWriter, status int, kind, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages":
		var q antParams
		if err := readJSON(r, &q); err != nil {
			antError(w, 400, "invalid_request_error", "bad json")
			return
		}
		c := q.call()
		s.mu.Lock()
		s.live++
		s.mu.Unlock()
		writeJSON(w, 200, antMessage(c, s.answer(c)[0]))
	case r.Method == http.MethodPost && path == "/v1/messages/batches":
		s.antCreate(w, r)
	case r.Method == http.MethodGet && path == "/v1/messages/batches":
		s.antList(w, r)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/results"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/v1/messages/batches/"), "/results")
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.jobs[id]
		if j == nil || j.phase < len(phases)-1 {
			antError(w, 404, "not_found_error", "no results for this batch")
			return
		}
		w.Header().Set("Content-Type", "application/x-jsonl")
		var b bytes.Buffer
		for _, o := range j.outcomes {
			res := map[string]any{}
			switch {
			case o.state == "expired":
				res["type"] = "expired"
			case o.state == "cancelled":
				res["type"] = "canceled"
			case o.status != 0:
				kind := "api_error"
				if o.status < 500 {
					kind = "invalid_request_error"
				}
				res["type"] = "errored"
				res["error"] = map[string]any{"type": "error", "request_id": "req_x", "error": map[string]any{"type": kind, "message": o.msg}}
			default:
				res["type"] = "succeeded"
				res["message"] = antMessage(o.call, o.texts[0])
			}
			enc(&b, map[string]any{"custom_id": o.id, "result": res})
		}
		w.Write(b.Bytes())
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/cancel"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/v1/messages/batches/"), "/cancel")
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.jobs[id]
		if j == nil {
			antError(w, 404, "not_found_error", "no such batch")
			return
		}
		if j.phase < len(phases)-1 {
			j.cancelled = true
		}
		writeJSON(w, 200, s.antBatch(j))
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/messages/batches/"):
		id := strings.TrimPrefix(path, "/v1/messages/batches/")
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.jobs[id]
		if j == nil {
			antError(w, 404, "not_found_error", "no such batch")
			return
		}
		s.advance(j)
		writeJSON(w, 200, s.antBatch(j))
	default:
		antError(w, 404, "not_found_error", "unknown path "+path)
	}
}

func (s *Server) antCreate(w http.ResponseWriter, r *http.Request) {
	if s.RateLimitCreates.Add(-1) >= 0 {
		w.Header().Set("Retry-After", "0")
		antError(w, 429, "rate_limit_error", "too many batches")
		return
	}
	var q struct {
		Requests []struct {
			CustomID string    `json:"custom_id"`
			Params   antParams `json:"params"`
		} `json:"requests"`
	}
	if err := readJSON(r, &q); err != nil || len(q.Requests) == 0 {
		antError(w, 400, "invalid_request_error", "bad batch")
		return
	}
	var calls []Call
	var ids []string
	for _, rq := range q.Requests {
		if rq.CustomID == "" || len(rq.CustomID) > 64 || strings.ContainsFunc(rq.CustomID, func(c rune) bool {
			return !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
		}) {
			antError(w, 400, "invalid_request_error", "custom_id "+rq.CustomID+" does not match ^[a-zA-Z0-9_-]{1,64}$")
			return
		}
		calls = append(calls, rq.Params.call())
		ids = append(ids, rq.CustomID)
	}
	s.mu.Lock()
	j := s.addJob("msgbatch_", "", calls[0].Model, calls, ids)
	body := s.antBatch(j)
	s.mu.Unlock()
	if s.BeforeCreateReply != nil {
		s.BeforeCreateReply(j.id)
	}
	writeJSON(w, 200, body)
}

func (s *Server) antList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := s.listPage(r, "after_id", s.antBatch)
	if resp["first_id"] == nil {
		resp["first_id"], resp["last_id"] = nil, nil // present, as null
	}
	writeJSON(w, 200, resp)
}

func (s *Server) antBatch(j *job) map[string]any {
	status := "in_progress"
	counts := map[string]int{"processing": j.total, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
	b := map[string]any{"id": j.id, "type": "message_batch", "created_at": j.created.Format(time.RFC3339Nano),
		"expires_at": j.created.Add(24 * time.Hour).Format(time.RFC3339Nano), "archived_at": nil, "cancel_initiated_at": nil,
		"ended_at": nil, "results_url": nil}
	if j.cancelled {
		status = "canceling"
		b["cancel_initiated_at"] = j.created.Format(time.RFC3339Nano)
	}
	if j.phase == len(phases)-1 {
		status = "ended"
		counts["processing"] = 0
		for _, o := range j.outcomes {
			switch {
			case o.state == "expired":
				counts["expired"]++
			case o.state == "cancelled":
				counts["canceled"]++
			case o.status != 0:
				counts["errored"]++
			default:
				counts["succeeded"]++
			}
		}
		// Lines a failed job never reached count as errored.
		counts["errored"] += j.total - len(j.outcomes)
		b["ended_at"] = j.ended.Format(time.RFC3339Nano)
		b["results_url"] = s.srv.URL + "/v1/messages/batches/" + j.id + "/results"
	}
	b["processing_status"] = status
	b["request_counts"] = counts
	return b
}
