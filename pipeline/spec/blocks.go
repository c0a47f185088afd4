package spec

import (
	"encoding/json"

	"gopkg.in/yaml.v3"
)

// ManifestBlock records a metric block in manifest.json: what it scored
// and under which policies, so a reader of the numbers (or the report)
// can say how each was counted.
type ManifestBlock struct {
	Name  string   `json:"name"`
	Kind  string   `json:"kind"`
	Tasks []string `json:"tasks,omitempty"`
	// Unparsed is the block's unparsed policy in force (its own, else the
	// run's); empty for kinds without one.
	Unparsed string `json:"unparsed_policy,omitempty"`
	Errors   string `json:"errors_policy"`
	// Settings are the block's other fields as written in the run file
	// (confidence meaning, require_confidence, bins, thresholds, ...).
	Settings map[string]any `json:"settings,omitempty"`
}

// ManifestBlocks describes the study's metric blocks.
func ManifestBlocks(st *Study) []ManifestBlock {
	var out []ManifestBlock
	for i, m := range st.Metrics {
		if i >= len(st.Blocks) {
			break
		}
		b := st.Blocks[i]
		mb := ManifestBlock{Name: b.BlockName(), Kind: b.Kind, Tasks: b.Tasks, Errors: b.ErrorsPolicy()}
		if up, ok := m.(UnparsedPolicier); ok {
			if mb.Unparsed = up.UnparsedOverride(); mb.Unparsed == "" {
				mb.Unparsed = st.UnparsedPolicy()
			}
		}
		mb.Settings = blockSettings(st, i)
		out = append(out, mb)
	}
	return out
}

// blockSettings is the i-th block's config as a map through its YAML tags,
// without the fields every block has.
func blockSettings(st *Study, i int) map[string]any {
	if st.Run == nil {
		return nil
	}
	// Blocks and Run.Metrics align only through the configs' bases.
	for _, mn := range st.Run.Metrics {
		if mn.Config == nil || mn.Config.Common() != st.Blocks[i] {
			continue
		}
		b, err := yaml.Marshal(mn.Config)
		if err != nil {
			return nil
		}
		var m map[string]any
		if yaml.Unmarshal(b, &m) != nil {
			return nil
		}
		for _, k := range []string{"kind", "name", "tasks", "errors", "doc", "unparsed"} {
			delete(m, k)
		}
		// Through JSON once, so the manifest holds plain JSON values.
		if j, err := json.Marshal(m); err == nil {
			var out map[string]any
			if json.Unmarshal(j, &out) == nil && len(out) > 0 {
				return out
			}
		}
		return nil
	}
	return nil
}
