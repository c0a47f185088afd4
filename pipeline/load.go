package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/scripted"
)

// layer is one YAML mapping that contributes to a spec; later layers
// override earlier ones field by field ("use:" files, "extends:" models).
type layer struct {
	file string
	node *yaml.Node
	path string // field path of the node within its file ("" for a whole file)
}

type loader struct {
	ds      *Diags
	runFile string
	dir     string
	paths   Paths
	files   map[string][]byte
	cache   map[string]*yaml.Node
	lines   map[string]map[string]int // file -> field path -> line
}

// line is the line of a field path in a file, or dflt when unknown.
func (l *loader) line(file, path string, dflt int) int {
	if n, ok := l.lines[file][path]; ok {
		return n
	}
	return dflt
}

// subLines is the line index of a file below a field path, with the path
// prefix removed (for specs declared inline in the run file).
func (l *loader) subLines(file, prefix string) map[string]int {
	if prefix == "" {
		return l.lines[file]
	}
	out := map[string]int{}
	for k, v := range l.lines[file] {
		if rest, ok := strings.CutPrefix(k, prefix+"."); ok {
			out[rest] = v
		}
	}
	return out
}

func (l *loader) decoder(file string) *Decoder {
	d := NewDecoder(file, l.ds)
	if l.lines[file] == nil {
		l.lines[file] = map[string]int{}
	}
	d.Lines = l.lines[file]
	return d
}

func (l *loader) read(path string) (*yaml.Node, bool) {
	if n, ok := l.cache[path]; ok {
		return n, n != nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		l.cache[path] = nil
		return nil, false
	}
	l.files[path] = data
	n := ParseYAML(path, data, l.ds)
	l.cache[path] = n
	return n, n != nil
}

// Load reads a run file and everything it references, compiles it and
// validates it. Every problem found is returned at once as Diags.
func Load(runFile string) (*Study, error) {
	ds := &Diags{}
	st := load(runFile, ds)
	if len(*ds) > 0 {
		return st, ds.Sorted()
	}
	return st, nil
}

func load(runFile string, ds *Diags) *Study {
	l := &loader{ds: ds, runFile: runFile, dir: filepath.Dir(runFile), files: map[string][]byte{}, cache: map[string]*yaml.Node{}, lines: map[string]map[string]int{}}
	data, err := os.ReadFile(runFile)
	if err != nil {
		ds.Addf(runFile, 0, "", "check the path", "cannot read the run file: %v", err)
		return nil
	}
	l.files[runFile] = data
	root := ParseYAML(runFile, data, ds)
	if root == nil {
		return nil
	}
	var rf RunFile
	l.decoder(runFile).Decode(root, &rf, "")
	l.paths = rf.Paths
	st := &Study{File: runFile, Dir: l.dir, Run: &rf}
	st.PromptsDir = l.path(rf.Paths.Prompts, "../prompts")
	switch rf.Settings.Unparsed {
	case "", "wrong", "exclude":
	default:
		ds.Addf(runFile, fieldLine(root, "settings"), "settings.unparsed", "use wrong or exclude", "unknown policy %q", rf.Settings.Unparsed)
	}
	if rf.Settings.Concurrency < 0 {
		ds.Addf(runFile, fieldLine(root, "settings"), "settings.concurrency", "use a positive number", "concurrency must be positive")
	}

	// Models.
	modelLayers := map[string][]layer{}
	for i := range rf.Models {
		n := &rf.Models[i]
		path := fmt.Sprintf("models[%d]", i)
		layers := l.layers(n, path, l.path(rf.Paths.Models, "models"), "model")
		if layers == nil {
			continue
		}
		// extends: a model declared earlier in this run file.
		if ext := scalarField(layers[len(layers)-1].node, "extends"); ext != "" {
			base, ok := modelLayers[ext]
			if !ok {
				ds.Addf(layers[len(layers)-1].file, n.Line, path+".extends", "extends names a model declared earlier in the list", "no earlier model %q", ext)
				continue
			}
			layers = append(append([]layer(nil), base...), layers...)
		}
		var spec ModelSpec
		l.decodeLayers(layers, &spec)
		spec.File, spec.Line = layers[len(layers)-1].file, n.Line
		if spec.Name == "" {
			continue
		}
		if _, dup := modelLayers[spec.Name]; dup {
			ds.Addf(spec.File, n.Line, path+".name", "model names must be unique", "model %q is declared twice", spec.Name)
			continue
		}
		modelLayers[spec.Name] = layers
		if m := l.compileModel(&spec, path); m != nil {
			st.Models = append(st.Models, m)
		}
	}
	// Tasks.
	for i := range rf.Tasks {
		n := &rf.Tasks[i]
		path := fmt.Sprintf("tasks[%d]", i)
		layers := l.layers(n, path, l.path(rf.Paths.Tasks, "tasks"), "task")
		if layers == nil {
			continue
		}
		spec := &TaskSpec{}
		l.decodeLayers(layers, spec)
		spec.File, spec.Line = layers[0].file, layers[0].node.Line
		if spec.Name == "" {
			continue
		}
		if st.Task(spec.Name) != nil {
			ds.Addf(layers[len(layers)-1].file, n.Line, path+".name", "task names must be unique", "task %q is declared twice", spec.Name)
			continue
		}
		st.Tasks = append(st.Tasks, compileTask(spec, st.PromptsDir, ds, l.subLines(layers[0].file, layers[0].path)))
	}
	// Strategies.
	for i := range rf.Strategies {
		n := &rf.Strategies[i]
		path := fmt.Sprintf("strategies[%d]", i)
		layers := l.layers(n, path, l.path(rf.Paths.Strategies, "strategies"), "strategy")
		if layers == nil {
			continue
		}
		spec := &StrategySpec{}
		// Stages come from the strategy file only: overriding a list
		// element by element would be unreadable in review.
		l.decodeLayers(layers, spec)
		spec.File, spec.Line = layers[0].file, layers[0].node.Line
		if spec.Name == "" {
			continue
		}
		if st.Strategy(spec.Name) != nil {
			ds.Addf(layers[len(layers)-1].file, n.Line, path+".name", "give the variant its own name", "strategy %q is declared twice", spec.Name)
			continue
		}
		st.Strategies = append(st.Strategies, compileStrategy(spec, st.PromptsDir, ds, l.subLines(spec.File, layers[0].path)))
	}
	l.resolveJudges(st)
	l.resolveMatrix(st, root)
	for i, mn := range rf.Metrics {
		if mn.Config == nil {
			continue
		}
		b := &MetricBuild{Diags: ds, File: runFile, Index: i, Study: st, Base: mn.Config.Common(), Lines: l.lines[runFile]}
		if m := mn.Config.Build(b); m != nil {
			st.Metrics = append(st.Metrics, m)
		}
	}
	for _, s := range st.Strategies {
		l.collectTemplates(s)
	}
	for _, t := range st.Tasks {
		if t.Judge != nil && t.Judge.Strategy != nil {
			l.collectTemplates(t.Judge.Strategy)
		}
	}
	if len(*ds) == 0 {
		dryRun(st, ds)
	}
	// Output folder and config hash.
	st.OutDir = rf.Output
	if st.OutDir == "" && rf.Name != "" {
		st.OutDir = filepath.Join("out", rf.Name)
	}
	names := make([]string, 0, len(l.files))
	for f := range l.files {
		names = append(names, f)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, f := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(l.files[f]))
		h.Write(l.files[f])
	}
	st.ConfigHash = hex.EncodeToString(h.Sum(nil))
	st.Files = names
	return st
}

// collectTemplates adds the template files a strategy reads to the config
// hash, so editing a prompt changes the hash.
func (l *loader) collectTemplates(s *Strategy) {
	for _, n := range s.Nodes {
		if tf, ok := n.Config.(interface{ TemplateFiles() []string }); ok {
			for _, f := range tf.TemplateFiles() {
				p := filepath.Join(l.path(l.paths.Prompts, "../prompts"), f)
				if data, err := os.ReadFile(p); err == nil {
					l.files[p] = data
				}
			}
		}
	}
}

func (l *loader) path(set, dflt string) string {
	p := set
	if p == "" {
		p = dflt
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(l.dir, p)
}

// layers turns a models/tasks/strategies list entry into the layers that
// define it: a bare name loads <dir>/<name>.yaml; {use: name, ...} loads
// it and overrides fields; any other mapping is an inline definition.
func (l *loader) layers(n *yaml.Node, path, dir, what string) []layer {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.ScalarNode:
		return l.fileLayer(n, n.Value, path, dir, what)
	case yaml.MappingNode:
		use := ""
		var rest []*yaml.Node
		var useNode *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "use" {
				use, useNode = n.Content[i+1].Value, n.Content[i+1]
				continue
			}
			rest = append(rest, n.Content[i], n.Content[i+1])
		}
		if use == "" {
			return []layer{{l.runFile, n, path}}
		}
		base := l.fileLayer(useNode, use, path+".use", dir, what)
		if base == nil {
			return nil
		}
		over := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column, Content: rest}
		return append(base, layer{l.runFile, over, path})
	}
	l.ds.Addf(l.runFile, n.Line, path, fmt.Sprintf("write a %s name or a mapping", what), "expected a %s name or mapping, got %s", what, kindName(n))
	return nil
}

func (l *loader) fileLayer(at *yaml.Node, name, path, dir, what string) []layer {
	if name == "" || strings.ContainsAny(name, `/\`) && !strings.HasSuffix(name, ".yaml") {
		l.ds.Addf(l.runFile, at.Line, path, "", "bad %s name %q", what, name)
		return nil
	}
	file := filepath.Join(dir, name)
	if !strings.HasSuffix(file, ".yaml") && !strings.HasSuffix(file, ".yml") {
		file += ".yaml"
	}
	node, ok := l.read(file)
	if !ok {
		if _, err := os.Stat(file); err != nil {
			l.ds.Addf(l.runFile, at.Line, path, fmt.Sprintf("create %s, or declare the %s inline", file, what), "%s %q not found", what, name)
		}
		return nil
	}
	return []layer{{file, node, ""}}
}

func (l *loader) decodeLayers(layers []layer, v any) {
	for i, ly := range layers {
		d := l.decoder(ly.file)
		d.Overlay = i > 0
		d.Decode(ly.node, v, ly.path)
	}
}

func scalarField(n *yaml.Node, key string) string {
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Value
		}
	}
	return ""
}

func fieldLine(n *yaml.Node, key string) int {
	if n == nil {
		return 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

var providerKinds = map[string]bool{"openai": true, "openai-compatible": true, "anthropic": true, "gemini": true, "scripted": true, "none": true}

func (l *loader) compileModel(spec *ModelSpec, path string) *Model {
	m := &Model{Spec: spec, Name: spec.Name}
	fpath := func(field string) string {
		if spec.File == l.runFile {
			return path + "." + field
		}
		return field
	}
	if !providerKinds[spec.Provider] {
		l.ds.Addf(spec.File, l.line(spec.File, fpath("provider"), spec.Line), path+".provider", "use openai, openai-compatible, anthropic, gemini, scripted or none", "unknown provider %q", spec.Provider)
		return nil
	}
	m.Identity = spec.Provider + "|" + strings.TrimRight(spec.BaseURL, "/")
	if spec.Provider == "scripted" {
		if spec.Script == nil {
			l.ds.Addf(spec.File, spec.Line, path+".script", "add script: {replies: [...]}", "a scripted model needs a script")
			return nil
		}
		if spec.Script.File != "" {
			file := spec.Script.File
			if !filepath.IsAbs(file) {
				file = filepath.Join(filepath.Dir(spec.File), file)
			}
			if n, ok := l.read(file); ok {
				var more []scripted.Reply
				l.decoder(file).Decode(n, &more, "")
				spec.Script.Replies = append(spec.Script.Replies, more...)
			} else {
				l.ds.Addf(spec.File, spec.Line, path+".script.file", "the path is relative to the file that declares the model", "cannot read %s", file)
				return nil
			}
		}
		p, err := scripted.Compile(spec.Script)
		if err != nil {
			l.ds.Addf(spec.File, spec.Line, path+".script", "", "%v", err)
			return nil
		}
		m.Provider = p
		// The script is the model: a changed script must not be served
		// replies cached from the old one.
		h := sha256.Sum256([]byte(jsonString(spec.Script)))
		m.Identity += "|" + hex.EncodeToString(h[:8])
	} else if spec.Provider == "none" {
		m.Provider = noCalls{spec.Name}
	} else if spec.Script != nil {
		l.ds.Addf(spec.File, spec.Line, path+".script", "remove it, or set provider: scripted", "script only applies to provider scripted")
	}
	switch spec.Limits.Mode {
	case "", ModeLive:
	case ModeBatch:
		if spec.Provider == "scripted" || spec.Provider == "none" {
			l.ds.Addf(spec.File, l.line(spec.File, fpath("limits.mode"), spec.Line), path+".limits.mode", "remove it: only openai, openai-compatible, anthropic and gemini models have batch APIs", "provider %s has no batch mode", spec.Provider)
		}
	default:
		l.ds.Addf(spec.File, l.line(spec.File, fpath("limits.mode"), spec.Line), path+".limits.mode", "use live or batch", "unknown mode %q", spec.Limits.Mode)
	}
	vars := map[string]any{}
	for k, v := range spec.Vars {
		vars[k] = v
	}
	if vf := spec.VarsFile; vf != nil {
		file := vf.Path
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(spec.File), file)
		}
		line := l.line(spec.File, fpath("vars_file"), spec.Line)
		if _, err := os.Stat(file); err != nil && vf.Optional {
			// not produced yet: the inline vars stand
		} else if n, ok := l.read(file); !ok {
			l.ds.Addf(spec.File, line, path+".vars_file", "run the study that writes it first, or set optional: true", "cannot read %s", file)
		} else {
			var all map[string]map[string]string
			l.decoder(file).Decode(n, &all, "")
			for k, v := range all[spec.Name] {
				vars[k] = v
			}
		}
	}
	m.Env = map[string]any{"name": spec.Name, "id": spec.ID(), "provider": spec.Provider, "vars": vars}
	return m
}

// resolveJudges loads each task's judge strategy and finds its model.
func (l *loader) resolveJudges(st *Study) {
	judges := map[string]*Strategy{}
	for _, t := range st.Tasks {
		js := t.Spec.Judge
		if js == nil {
			continue
		}
		file, line := t.File, l.line(t.File, "judge", t.Spec.Line)
		m := st.Model(js.Model)
		if m == nil {
			l.ds.Addf(file, l.line(t.File, "judge.model", line), "judge.model", "declare the judge model under models in the run file", "no model %q for the judge", js.Model)
		}
		s, ok := judges[js.Strategy]
		if !ok {
			layers := l.fileLayer(&yaml.Node{Line: line}, js.Strategy, "judge.strategy", l.path(l.paths.Strategies, "strategies"), "strategy")
			if layers == nil {
				continue
			}
			spec := &StrategySpec{}
			l.decodeLayers(layers, spec)
			spec.File, spec.Line = layers[0].file, layers[0].node.Line
			s = compileStrategy(spec, l.path(l.paths.Prompts, "../prompts"), l.ds, l.subLines(spec.File, ""))
			judges[js.Strategy] = s
		}
		if s != nil && !s.Spec.Judge {
			l.ds.Addf(file, l.line(t.File, "judge.strategy", line), "judge.strategy", "add judge: true to the strategy file", "strategy %q is not marked as a judge", js.Strategy)
		}
		if m != nil {
			t.Judge = &TaskJudge{Strategy: s, Model: m}
		}
	}
}

func (l *loader) resolveMatrix(st *Study, root *yaml.Node) {
	rf := st.Run
	file := l.runFile
	line := fieldLine(root, "matrix")
	blocks := rf.Matrix
	if len(blocks) == 0 {
		blocks = Matrix{{}}
	}
	seen := map[[3]string]bool{}
	for bi, b := range blocks {
		path := fmt.Sprintf("matrix[%d]", bi)
		models := b.Models
		if len(models) == 0 {
			for _, m := range st.Models {
				models = append(models, m.Name)
			}
		}
		strategies := b.Strategies
		explicitStrategies := len(strategies) > 0
		if !explicitStrategies {
			for _, s := range st.Strategies {
				strategies = append(strategies, s.Name)
			}
		}
		tasks := b.Tasks
		if len(tasks) == 0 {
			for _, t := range st.Tasks {
				tasks = append(tasks, t.Name)
			}
		}
		ok := true
		for _, n := range models {
			if st.Model(n) == nil {
				l.ds.Addf(file, line, path+".models", "name a model declared under models", "no model %q", n)
				ok = false
			}
		}
		for _, n := range strategies {
			if st.Strategy(n) == nil {
				l.ds.Addf(file, line, path+".strategies", "name a strategy declared under strategies", "no strategy %q", n)
				ok = false
			}
		}
		for _, n := range tasks {
			if st.Task(n) == nil {
				l.ds.Addf(file, line, path+".tasks", "name a task declared under tasks", "no task %q", n)
				ok = false
			}
		}
		if !ok {
			continue
		}
		for _, mn := range models {
			for _, sn := range strategies {
				for _, tn := range tasks {
					if excluded(b.Exclude, mn, sn, tn) {
						continue
					}
					s, t := st.Strategy(sn), st.Task(tn)
					if s.Spec.Judge {
						if explicitStrategies {
							l.ds.Addf(file, line, path+".strategies", "use it as a task's judge: {strategy: "+sn+", model: ...}", "strategy %q is a judge and cannot run in the matrix", sn)
						}
						continue
					}
					if !applies(s.Spec.AppliesTo, t) {
						if explicitStrategies && len(b.Tasks) > 0 {
							l.ds.Addf(file, line, path, "remove the pair from the block, or widen the strategy's applies_to",
								"strategy %q does not apply to task %q (applies_to: %v)", sn, tn, s.Spec.AppliesTo)
						}
						continue
					}
					k := [3]string{mn, sn, tn}
					if seen[k] {
						continue
					}
					seen[k] = true
					st.Cells = append(st.Cells, ResolvedCell{st.Model(mn), s, t})
				}
			}
		}
	}
}

func excluded(ex []Cell, m, s, t string) bool {
	for _, c := range ex {
		if (c.Model == "" || c.Model == m) && (c.Strategy == "" || c.Strategy == s) && (c.Task == "" || c.Task == t) {
			return true
		}
	}
	return false
}

func applies(to []string, t *Task) bool {
	if len(to) == 0 {
		return true
	}
	for _, a := range to {
		if a == t.Name || (t.Spec.Type != "" && a == t.Spec.Type) {
			return true
		}
	}
	return false
}
