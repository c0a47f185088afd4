package fake

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

type oaiRequest struct {
	Model               string `json:"model"`
	N                   int    `json:"n"`
	MaxTokens           int    `json:"max_tokens"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	Messages            []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (q *oaiRequest) call() Call {
	c := Call{Model: q.Model, N: q.N, MaxTokens: max(q.MaxTokens, q.MaxCompletionTokens)}
	for _, m := range q.Messages {
		c.Messages = append(c.Messages, Message{Role: m.Role, Text: textOf(m.Content)})
	}
	return c
}

func oaiCompletion(c Call, texts []string) map[string]any {
	var choices []map[string]any
	completion := 0
	for i, t := range texts {
		choices = append(choices, map[string]any{"index": i, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": t}})
		completion += tokens(t)
	}
	p := promptTokens(c)
	return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": c.Model + "-fake",
		"choices": choices, "usage": map[string]any{"prompt_tokens": p, "completion_tokens": completion, "total_tokens": p + completion}}
}

func oaiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
}

func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && path == "/chat/completions":
		var q oaiRequest
		if err := readJSON(r, &q); err != nil {
			oaiError(w, 400, "bad json")
			return
		}
		c := q.call()
		s.mu.Lock()
		s.live++
		s.mu.Unlock()
		writeJSON(w, 200, oaiCompletion(c, s.answer(c)))
	case s.NoBatch && (strings.HasPrefix(path, "/files") || strings.HasPrefix(path, "/batches")):
		http.NotFound(w, r)
	case r.Method == http.MethodPost && path == "/files":
		s.oaiUpload(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/files/") && strings.HasSuffix(path, "/content"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/files/"), "/content")
		s.mu.Lock()
		data, ok := s.files[id]
		s.mu.Unlock()
		if !ok {
			oaiError(w, 404, "no such file")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	case r.Method == http.MethodPost && path == "/batches":
		s.oaiCreate(w, r)
	case r.Method == http.MethodGet && path == "/batches":
		s.oaiList(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/batches/"):
		id := strings.TrimPrefix(path, "/batches/")
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.jobs[id]
		if j == nil {
			oaiError(w, 404, "no such batch")
			return
		}
		s.advance(j)
		writeJSON(w, 200, s.oaiBatch(j))
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/batches/") && strings.HasSuffix(path, "/cancel"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/batches/"), "/cancel")
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.jobs[id]
		if j == nil {
			oaiError(w, 404, "no such batch")
			return
		}
		if j.phase < len(phases)-1 {
			j.cancelled = true
		}
		writeJSON(w, 200, s.oaiBatch(j))
	default:
		oaiError(w, 404, "unknown path "+r.URL.Path)
	}
}

func (s *Server) oaiUpload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(1 << 30); err != nil {
		oaiError(w, 400, "bad upload: "+err.Error())
		return
	}
	if r.FormValue("purpose") != "batch" {
		oaiError(w, 400, "purpose must be batch")
		return
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		oaiError(w, 400, "no file")
		return
	}
	data, _ := io.ReadAll(f)
	s.mu.Lock()
	id := s.newID("file-")
	s.files[id] = data
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"id": id, "object": "file", "bytes": len(data), "created_at": 1, "filename": "batch.jsonl", "purpose": "batch", "status": "processed"})
}

func (s *Server) oaiCreate(w http.ResponseWriter, r *http.Request) {
	if s.RateLimitCreates.Add(-1) >= 0 {
		w.Header().Set("Retry-After", "0")
		oaiError(w, 429, "too many batches being created")
		return
	}
	var q struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := readJSON(r, &q); err != nil || q.Endpoint != "/v1/chat/completions" || q.CompletionWindow != "24h" {
		oaiError(w, 400, "bad batch request")
		return
	}
	s.mu.Lock()
	data, ok := s.files[q.InputFileID]
	s.mu.Unlock()
	if !ok {
		oaiError(w, 404, "no such file")
		return
	}
	var calls []Call
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var line struct {
			CustomID string     `json:"custom_id"`
			Method   string     `json:"method"`
			URL      string     `json:"url"`
			Body     oaiRequest `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.CustomID == "" || line.Method != "POST" || line.URL != "/v1/chat/completions" {
			oaiError(w, 400, fmt.Sprintf("line %d of the input file is not a batch request", len(calls)+1))
			return
		}
		calls = append(calls, line.Body.call())
		ids = append(ids, line.CustomID)
	}
	s.mu.Lock()
	delete(s.files, q.InputFileID)
	j := s.addJob("batch_", q.Metadata["promoral_batch"], calls[0].Model, calls, ids)
	body := s.oaiBatch(j)
	body["metadata"] = q.Metadata
	s.mu.Unlock()
	if s.BeforeCreateReply != nil {
		s.BeforeCreateReply(j.id)
	}
	writeJSON(w, 200, body)
}

func (s *Server) oaiList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := s.listPage(r, "after", s.oaiBatch)
	resp["object"] = "list"
	writeJSON(w, 200, resp)
}

// oaiBatch renders a job as a Batch object, writing its output and error
// files once it has ended.
func (s *Server) oaiBatch(j *job) map[string]any {
	state := s.phaseName(j)
	b := map[string]any{"id": j.id, "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": "file-in",
		"completion_window": "24h", "status": state, "created_at": j.created.Unix(), "expires_at": j.created.Unix() + 86400,
		"metadata": map[string]string{"promoral_batch": j.name}}
	completed, failed := 0, 0
	if j.phase == len(phases)-1 {
		var out, errs bytes.Buffer
		render := !j.rendered
		j.rendered = true
		for _, o := range j.outcomes {
			line := map[string]any{"id": "batch_req_" + o.id, "custom_id": o.id}
			switch {
			case o.state != "":
				line["response"] = nil
				line["error"] = map[string]any{"code": "batch_" + o.state, "message": "This request could not be executed before the batch " + o.state + "."}
				failed++
				if render {
					enc(&errs, line)
				}
			case o.status != 0:
				line["response"] = map[string]any{"status_code": o.status, "request_id": "req_x", "body": map[string]any{"error": map[string]any{"message": o.msg, "type": "server_error"}}}
				line["error"] = nil
				failed++
				if render {
					enc(&errs, line)
				}
			default:
				line["response"] = map[string]any{"status_code": 200, "request_id": "req_x", "body": oaiCompletion(o.call, o.texts)}
				line["error"] = nil
				completed++
				if render {
					enc(&out, line)
				}
			}
		}
		if completed > 0 {
			b["output_file_id"] = "file-out-" + j.id
		}
		if failed > 0 {
			b["error_file_id"] = "file-err-" + j.id
		}
		if render {
			s.files["file-out-"+j.id], s.files["file-err-"+j.id] = out.Bytes(), errs.Bytes()
		}
		if state == "failed" {
			b["errors"] = map[string]any{"object": "list", "data": []map[string]any{{"code": "invalid_request", "message": "the fake failed this batch"}}}
		}
	} else if j.phase >= 1 {
		completed = j.total / 3
	}
	b["request_counts"] = map[string]any{"total": j.total, "completed": completed, "failed": failed}
	return b
}

func enc(b *bytes.Buffer, v any) {
	data, _ := json.Marshal(v)
	b.Write(data)
	b.WriteByte('\n')
}
