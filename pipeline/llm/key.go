package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// Canonical returns the request's canonical JSON, byte for byte what
// encoding/json.Marshal gives: struct fields in declaration order, map keys
// sorted, no insignificant space. Two requests with the same canonical form
// get the same reply from the cache. The messages (the long part) are encoded
// by hand; the rest goes through encoding/json.
func (r *Request) Canonical() []byte { return r.AppendCanonical(nil) }

// AppendCanonical appends the canonical form to b.
func (r *Request) AppendCanonical(b []byte) []byte {
	b, _, _ = r.AppendCanonicalSpan(b)
	return b
}

// AppendCanonicalSpan is AppendCanonical, also saying where in b the
// messages' JSON lies (b[from:to]). It is MessagesJSON's form too when no
// message holds <, > or & (the canonical form escapes them) and the
// messages are not nil (null here, [] there): see MessagesJSONFrom.
func (r *Request) AppendCanonicalSpan(b []byte) (_ []byte, from, to int) {
	const skip = `{"model":"","messages":null`
	var tail []byte
	if !r.plainTail() {
		rest := *r
		rest.Model, rest.Messages = "", nil
		var err error
		tail, err = json.Marshal(&rest)
		if err != nil {
			// Only Extra can hold unmarshalable values; config validation rejects them.
			panic("llm: request cannot be encoded: " + err.Error())
		}
		if !bytes.HasPrefix(tail, []byte(skip)) {
			panic("llm: unexpected encoding of a request")
		}
		tail = tail[len(skip):]
	}
	n := len(tail) + len(r.Model) + 160
	for _, m := range r.Messages {
		// Room for the text and a little escaping, so the prompt is
		// copied once.
		n += len(m.Role) + len(m.Content) + len(m.Content)/16 + 32
	}
	b = slices.Grow(b, n)
	b = append(b, `{"model":`...)
	b = appendJSONString(b, r.Model, true)
	b = append(b, `,"messages":`...)
	from = len(b)
	if r.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = appendMessages(b, r.Messages, true)
	}
	to = len(b)
	if tail != nil {
		return append(b, tail...), from, to
	}
	b, _ = r.appendTail(b)
	return b, from, to
}

// MessagesJSONFrom is MessagesJSON(r.Messages), taken from the messages'
// span of r's canonical form: the same text but for the escapes of <, >
// and &, which are undone.
func (r *Request) MessagesJSONFrom(canonical []byte) string {
	if r.Messages == nil {
		return MessagesJSON(r.Messages)
	}
	html := false
	for _, m := range r.Messages {
		if strings.ContainsAny(m.Content, "<>&") || strings.ContainsAny(m.Role, "<>&") {
			html = true
			break
		}
	}
	if !html {
		return string(canonical)
	}
	return string(unescapeHTML(make([]byte, 0, len(canonical)), canonical))
}

// unescapeHTML turns encoding/json's \u003c, \u003e and \u0026 back into
// <, > and &, leaving every other escape as it is. Escapes are read from
// left to right, so an escaped backslash before "u003c" is never taken
// for the start of one.
func unescapeHTML(b, js []byte) []byte {
	start := 0
	for i := 0; i < len(js); i++ {
		if js[i] != '\\' || i+1 >= len(js) {
			continue
		}
		if js[i+1] == 'u' && i+5 < len(js) && js[i+2] == '0' && js[i+3] == '0' {
			var c byte
			switch string(js[i+4 : i+6]) {
			case "3c":
				c = '<'
			case "3e":
				c = '>'
			case "26":
				c = '&'
			}
			if c != 0 {
				b = append(b, js[start:i]...)
				b = append(b, c)
				i += 5
				start = i + 1
				continue
			}
		}
		i++ // the escaped character, whatever it is
	}
	return append(b, js[start:]...)
}

// MessagesJSON encodes messages exactly as encoding/json does, without
// reflection: it runs for every call (cache key and calls.parquet).
func MessagesJSON(msgs []Message) string {
	n := 2
	for _, m := range msgs {
		n += len(m.Role) + len(m.Content) + 32
	}
	return string(appendMessages(make([]byte, 0, n), msgs, false))
}

// AppendJSONString appends s as a JSON string (no HTML escaping), as
// encoding/json would, without reflection.
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s, false) }

// appendMessages encodes messages; html escapes <, > and & as encoding/json
// does by default (the canonical form needs that to stay byte-identical).
func appendMessages(b []byte, msgs []Message, html bool) []byte {
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		b = appendJSONString(b, m.Role, html)
		b = append(b, `,"content":`...)
		b = appendJSONString(b, m.Content, html)
		b = append(b, '}')
	}
	return append(b, ']')
}

// plainJSON marks the bytes a JSON string holds as they are; plainHTML
// also escapes <, > and &.
var plainJSON, plainHTML = func() (p, h [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		p[c] = c != '"' && c != '\\'
		h[c] = p[c] && c != '<' && c != '>' && c != '&'
	}
	return p, h
}()

func appendJSONString(b []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	plain := &plainJSON
	if html {
		plain = &plainHTML
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < 0x80 {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Key is the hex SHA-256 of the canonical form: the cache and journal key.
func (r *Request) Key() string {
	sum := sha256.Sum256(r.Canonical())
	return hex.EncodeToString(sum[:])
}
