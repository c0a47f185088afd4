package spec

import (
	"encoding/json"

	"github.com/promoral/promoral/pipeline/yamlstrict"
	"github.com/promoral/promoral/runfolder/manifest"

	"gopkg.in/yaml.v3"
)

// ManifestBlocks describes the study's metric blocks.
func ManifestBlocks(st *Study) []manifest.Block {
	var out []manifest.Block
	for i, m := range st.Metrics {
		if i >= len(st.Blocks) {
			break
		}
		b := st.Blocks[i]
		mb := manifest.Block{Name: b.BlockName(), Kind: b.Kind, Tasks: b.Tasks, Errors: b.ErrorsPolicy()}
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
		if mn.node != nil {
			onlyWritten(m, mn.node)
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

// onlyWritten drops from v (a config through YAML) what n, the mapping or
// list it was decoded from, does not hold: the defaults decoding filled in.
func onlyWritten(v any, n *yaml.Node) {
	n = yamlstrict.ResolveAlias(n)
	if n == nil {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if n.Kind != yaml.MappingNode {
			return
		}
		written := map[string]*yaml.Node{}
		for _, kv := range yamlstrict.MappingPairs(n) {
			written[kv[0].Value] = kv[1]
		}
		for k, e := range x {
			if w, ok := written[k]; ok {
				onlyWritten(e, w)
			} else {
				delete(x, k)
			}
		}
	case []any:
		if n.Kind == yaml.SequenceNode && len(n.Content) == len(x) {
			for i, e := range x {
				onlyWritten(e, n.Content[i])
			}
		}
	}
}
