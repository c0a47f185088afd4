package view

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
)

// The page may not be framed (a hostile page could lay the viewer under its
// own and make a click land on an audit-label button), and loads nothing
// but the viewer's own files: its script and style sheet are served under
// /assets/, the page has no inline script or style, and fetches only this
// server's API. Every response carries the policy.
const (
	pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	// The report (report.html, written by promoral report to open on its
	// own, offline) has its style sheet inline and colours set in style
	// attributes: its <style> elements are allowed by their hashes, the
	// attributes as they are (they cannot run script). Its script is the
	// viewer's own file (assets/report-links.js).
	reportCSPHead = "default-src 'none'; script-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; style-src-attr 'unsafe-inline'; style-src 'self'"
)

func setFrameHeaders(h http.Header, csp string) {
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", csp)
}

var styleElem = regexp.MustCompile(`(?s)<style[^>]*>(.*?)</style>`)

// reportCSP is the report's policy: its own <style> elements by hash.
func reportCSP(page []byte) string {
	var b strings.Builder
	b.WriteString(reportCSPHead)
	seen := map[string]bool{}
	for _, m := range styleElem.FindAllSubmatch(page, -1) {
		sum := sha256.Sum256(m[1])
		h := " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !seen[h] {
			seen[h] = true
			b.WriteString(h)
		}
	}
	return b.String()
}
