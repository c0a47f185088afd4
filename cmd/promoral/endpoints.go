package main

import (
	"io"
	"net/url"

	"github.com/promoral/promoral/pipeline/providers"
	"github.com/promoral/promoral/pipeline/spec"
)

// endpoint says where a model's calls go: its provider and base URL, without
// any credentials or query a URL may carry.
func endpoint(m *spec.Model) string {
	p := m.Spec.Provider
	u := m.Spec.BaseURL
	if u == "" {
		u = providers.DefaultBaseURL(p)
	}
	if u == "" {
		return p + " (no network)"
	}
	if pu, err := url.Parse(u); err == nil {
		pu.User, pu.RawQuery, pu.Fragment = nil, "", ""
		u = pu.String()
	} else {
		u = "(a base_url that does not parse)"
	}
	return p + " at " + u
}

// sayEndpoints names, under the summary, where each model's calls went and
// which models' cost is unknown.
func sayEndpoints(w io.Writer, st *spec.Study) {
	for _, m := range st.CalledModels() {
		note := ""
		if m.Unpriced() {
			note = "; no price: its cost is unknown"
		}
		say(w, "  model %s: %s%s", m.Name, endpoint(m), note)
	}
}
