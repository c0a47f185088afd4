package view

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Turn is one model call of a case's strategy as side by side shows it:
// what was asked that had not been asked before in the conversation, and
// the reply.
type Turn struct {
	Stage string    `json:"stage"`
	Visit int       `json:"visit,omitempty"`
	Asked []Message `json:"asked,omitempty"`
	// Earlier is how many messages of the conversation came before (shown
	// at the turns that asked them).
	Earlier int     `json:"earlier,omitempty"`
	Reply   *string `json:"reply"`
	Error   string  `json:"error,omitempty"`
}

// Message is one message of a request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// TurnPair is the k-th turn of both sides (nil where a side made fewer
// calls), with a word-level diff of the two replies.
type TurnPair struct {
	A    *Turn  `json:"a"`
	B    *Turn  `json:"b"`
	Diff []Span `json:"diff,omitempty"`
	Same bool   `json:"same"`
}

// Span is a run of the diff: "=" in both replies, "-" only in A's, "+"
// only in B's.
type Span struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// PairView is the side-by-side of two cases.
type PairView struct {
	A     Row        `json:"a"`
	B     Row        `json:"b"`
	Turns []TurnPair `json:"turns"`
}

// ComparePair lines up every turn of case a with the same turn of case b.
func ComparePair(a, b *Case) *PairView {
	ta, tb := turnsOf(a), turnsOf(b)
	out := &PairView{A: a.Row, B: b.Row, Turns: []TurnPair{}}
	for k := 0; k < max(len(ta), len(tb)); k++ {
		var p TurnPair
		if k < len(ta) {
			p.A = &ta[k]
		}
		if k < len(tb) {
			p.B = &tb[k]
		}
		if p.A != nil && p.B != nil && p.A.Reply != nil && p.B.Reply != nil {
			p.Diff = WordDiff(*p.A.Reply, *p.B.Reply)
			p.Same = *p.A.Reply == *p.B.Reply
		}
		out.Turns = append(out.Turns, p)
	}
	return out
}

// turnsOf lists the calls of a case's strategy in the order they were
// made (the judge's aside); a case without calls (a recorded reply
// re-scored) has one turn, its reply.
func turnsOf(c *Case) []Turn {
	var turns []Turn
	var prev []Message
	add := func(stage string, visit int, g *CallGroup) {
		last := g.Attempts[len(g.Attempts)-1]
		msgs := messagesOf(last.Messages)
		// A continued conversation repeats the earlier turns: only what
		// is new at this turn is shown.
		shared := 0
		for shared < len(msgs)-1 && shared < len(prev) && msgs[shared] == prev[shared] {
			shared++
		}
		t := Turn{Stage: stage, Visit: visit, Asked: msgs[shared:], Earlier: shared, Reply: last.Reply, Error: last.Error}
		turns = append(turns, t)
		prev = msgs
		if last.Reply != nil {
			prev = append(msgs[:len(msgs):len(msgs)], Message{Role: "assistant", Content: *last.Reply})
		}
	}
	for _, s := range c.Steps {
		if s.Calls != nil && !strings.HasPrefix(s.Stage, "judge.") {
			add(s.Stage, s.Visit, s.Calls)
		}
	}
	for k := range c.Calls {
		if !strings.HasPrefix(c.Calls[k].Stage, "judge.") {
			add(c.Calls[k].Stage, 0, &c.Calls[k])
		}
	}
	if len(turns) == 0 {
		if r, from := recordedReply(c); r != "" {
			turns = append(turns, Turn{Stage: from, Reply: &r})
		}
	}
	return turns
}

// recordedReply is the reply of a case that made no call: a reply field of
// its outputs or of its item.
func recordedReply(c *Case) (string, string) {
	for _, src := range []struct {
		name string
		raw  json.RawMessage
	}{{"outputs", c.Outputs}, {"item", c.Item}} {
		var m map[string]any
		if json.Unmarshal(src.raw, &m) != nil {
			continue
		}
		for _, k := range []string{"reply", "response", "answer", "output"} {
			if s, ok := m[k].(string); ok && s != "" {
				return s, src.name + "." + k
			}
		}
	}
	return "", ""
}

// messagesOf reads request_messages; a content that is not a string (parts
// of a multimodal message) is shown as its JSON.
func messagesOf(raw json.RawMessage) []Message {
	var ms []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &ms) != nil {
		return nil
	}
	out := make([]Message, len(ms))
	for k, m := range ms {
		out[k].Role = m.Role
		if json.Unmarshal(m.Content, &out[k].Content) != nil {
			out[k].Content = string(m.Content)
		}
	}
	return out
}

// maxDiffCells bounds the word diff's table (words of A × words of B, after
// the common start and end are set aside): past it the differing middle is
// shown as replaced whole.
const maxDiffCells = 4 << 20

// WordDiff compares two texts word by word (a word is a run of letters and
// digits, or one other character; white space counts as it is), as the
// longest common subsequence of their words.
func WordDiff(a, b string) []Span {
	wa, wb := splitWords(a), splitWords(b)
	var out []Span
	emit := func(op, text string) {
		if text == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].Op == op {
			out[n-1].Text += text
			return
		}
		out = append(out, Span{op, text})
	}
	pre := 0
	for pre < len(wa) && pre < len(wb) && wa[pre] == wb[pre] {
		pre++
	}
	suf := 0
	for suf < len(wa)-pre && suf < len(wb)-pre && wa[len(wa)-1-suf] == wb[len(wb)-1-suf] {
		suf++
	}
	emit("=", strings.Join(wa[:pre], ""))
	ma, mb := wa[pre:len(wa)-suf], wb[pre:len(wb)-suf]
	if len(ma)*len(mb) > maxDiffCells {
		emit("-", strings.Join(ma, ""))
		emit("+", strings.Join(mb, ""))
	} else {
		// lcs[i][j]: length of the common subsequence of ma[i:] and mb[j:].
		n, m := len(ma), len(mb)
		lcs := make([]int32, (n+1)*(m+1))
		at := func(i, j int) int32 { return lcs[i*(m+1)+j] }
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i*(m+1)+j] = at(i+1, j+1) + 1
				} else {
					lcs[i*(m+1)+j] = max(at(i+1, j), at(i, j+1))
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				emit("=", ma[i])
				i, j = i+1, j+1
			case i < n && (j == m || at(i+1, j) >= at(i, j+1)):
				emit("-", ma[i]) // a deletion before an insertion
				i++
			default:
				emit("+", mb[j])
				j++
			}
		}
	}
	emit("=", strings.Join(wa[len(wa)-suf:], ""))
	return out
}

// splitWords splits s into words, runs of white space, and single other
// characters; joined they give s back.
func splitWords(s string) []string {
	var out []string
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		class := runeClass(r)
		for n < len(s) && class != 2 {
			r2, n2 := utf8.DecodeRuneInString(s[n:])
			if runeClass(r2) != class {
				break
			}
			n += n2
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// runeClass: 0 letters and digits, 1 white space, 2 anything else (a
// token of its own).
func runeClass(r rune) int {
	switch {
	case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’':
		return 0
	case unicode.IsSpace(r):
		return 1
	}
	return 2
}

// pair answers /api/pair?a=I&b=J[&run_b=1]: case I of the first run
// beside case J of run_b (the same run by default).
func (s *Server) pair(w http.ResponseWriter, req *http.Request) {
	v := req.URL.Query()
	runs := s.list()
	rb := 0
	if x := v.Get("run_b"); x != "" {
		k, err := strconv.Atoi(x)
		if err != nil || k < 0 || k >= len(runs) {
			fail(w, 400, fmt.Errorf("run_b %q: this view has %d run(s), numbered from 0", x, len(runs)))
			return
		}
		rb = k
	}
	var cases [2]*Case
	for k, side := range []struct {
		name string
		run  *Run
	}{{"a", runs[0]}, {"b", runs[rb]}} {
		i, err := strconv.Atoi(v.Get(side.name))
		if err != nil {
			fail(w, 400, fmt.Errorf("%s %q: want a case number", side.name, v.Get(side.name)))
			return
		}
		if cases[k], err = side.run.Case(i); err != nil {
			fail(w, 404, err)
			return
		}
	}
	writeJSON(w, ComparePair(cases[0], cases[1]))
}
