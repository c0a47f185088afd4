package spec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral"
	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/yamlstrict"

	"github.com/promoral/promoral/pipeline/scripted"
	"github.com/promoral/promoral/pipeline/secret"
)

// layer is one YAML mapping that contributes to a spec; later layers
// override earlier ones field by field ("use:" files, "extends:" models).
type layer struct {
	file string
	node *yaml.Node
	path string // field path of the node within its file ("" for a whole file)
}

type loader struct {
	ds      *yamlstrict.Diags
	runFile string
	dir     string
	paths   Paths
	files   map[string][]byte
	cache   map[string]*yaml.Node
	lines   map[string]map[string]int // file -> field path -> line
	// items takes the fields of datasets too large to keep in memory.
	items *dataset.Store
	// data is the dataset cache and lock, once a task names hub data.
	data dataset.HubSource
	// factorDecls are the factor declarations of every layer of each
	// model, task and strategy spec (factorspec.go).
	factorDecls map[any]map[string][]factorDecl
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

func (l *loader) decoder(file string) *yamlstrict.Decoder {
	d := yamlstrict.NewDecoder(file, l.ds)
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
	n := yamlstrict.ParseYAML(path, data, l.ds)
	l.cache[path] = n
	return n, n != nil
}

// LoadOptions adjust LoadWith for callers other than a user's run (tests).
type LoadOptions struct {
	// AllowFixtures acts as settings.allow_fixtures: true, so a test can
	// run a shipped config whose tasks point at fixture data.
	AllowFixtures bool
	// Fetch lets loading download the hub datasets the cache lacks
	// (apply, data pull); without it such a task gets stand-in items, its
	// declared rows, for validate and plan (see TaskData.Pending).
	Fetch bool
	// NeedData makes a hub dataset the cache lacks an error, not stand-ins
	// (apply --offline).
	NeedData bool
	// Update names the tasks whose hub data is resolved again, replacing
	// their lock entries (data pull --update).
	Update []string
	// Progress follows downloads; Ctx stops them.
	Progress dataset.Progress
	Ctx      context.Context

	// unreached collects the datasets the hub could not be reached for.
	unreached *DownloadError
}

// LoadWith reads a run file and everything it references, compiles it and
// validates it, adjusted by o. Every problem found is returned at once as
// Diags; a config whose only problem is that the hub cannot be reached gets
// a *DownloadError, not config problems.
func LoadWith(runFile string, o LoadOptions) (*Study, error) {
	ds := &yamlstrict.Diags{}
	o.unreached = &DownloadError{}
	st := load(runFile, ds, o)
	if len(*ds) > 0 {
		for _, f := range o.unreached.Failed {
			ds.Addf(f.File, f.Line, f.Field, "", "dataset %s: cannot download %s: %s", f.Task, f.Ref, f.Cause)
		}
		return st, ds.Sorted()
	}
	if len(o.unreached.Failed) > 0 {
		return st, o.unreached
	}
	return st, nil
}

func load(runFile string, ds *yamlstrict.Diags, o LoadOptions) *Study {
	items, _ := dataset.NewStore()
	l := &loader{ds: ds, runFile: runFile, dir: filepath.Dir(runFile), files: map[string][]byte{}, cache: map[string]*yaml.Node{}, lines: map[string]map[string]int{},
		items: items}
	data, err := os.ReadFile(runFile)
	if err != nil {
		ds.Addf(runFile, 0, "", "check the path", "cannot read the run file: %v", err)
		return nil
	}
	l.files[runFile] = data
	root := yamlstrict.ParseYAML(runFile, data, ds)
	if root == nil {
		return nil
	}
	var rf RunFile
	l.decoder(runFile).Decode(root, &rf, "")
	l.paths = rf.Paths
	checkRunName(rf.Name, runFile, fieldLine(root, "name"), ds)
	st := &Study{File: runFile, Dir: l.dir, Run: &rf}
	st.PromptsDir = l.path(rf.Paths.Prompts, "../prompts")
	if rf.Settings.Cache != CacheRun && rf.Settings.CacheDir != "" {
		line := fieldLine(root, "settings")
		if ln, ok := l.lines[runFile]["settings.cache_dir"]; ok {
			line = ln
		}
		checkCacheDir(rf.Settings.CacheDir, l.dir, runFile, line, ds)
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
				earlier := make([]string, 0, len(modelLayers))
				for k := range modelLayers {
					earlier = append(earlier, k)
				}
				ds.Addf(layers[len(layers)-1].file, n.Line, path+".extends", yamlstrict.NameHint(ext, earlier, "extends names a model declared earlier in the list"), "no earlier model %q", ext)
				continue
			}
			layers = append(append([]layer(nil), base...), layers...)
		}
		var spec ModelSpec
		l.decodeLayers(layers, &spec)
		l.noteFactors(&spec, layers)
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
	fixtureAt := map[*Task][2]any{}
	for i := range rf.Tasks {
		n := &rf.Tasks[i]
		path := fmt.Sprintf("tasks[%d]", i)
		layers := l.layers(n, path, l.path(rf.Paths.Tasks, "tasks"), "task")
		if layers == nil {
			continue
		}
		spec := &TaskSpec{}
		mark := len(*ds)
		l.decodeLayers(layers, spec)
		l.noteFactors(spec, layers)
		spec.File, spec.Line = layers[0].file, layers[0].node.Line
		if spec.Name == "" {
			continue
		}
		if st.Task(spec.Name) != nil {
			ds.Addf(layers[len(layers)-1].file, n.Line, path+".name", "task names must be unique", "task %q is declared twice", spec.Name)
			continue
		}
		if !fixtureStands(layers) {
			spec.Fixture = ""
		}
		switch dataSource(layers) {
		case "path":
			spec.Dataset.Hub = nil
		case "hub":
			spec.Dataset.Path = ""
		}
		data := l.resolveData(spec, o, rf.Settings.AllowFixtures || o.AllowFixtures, n.Line, path)
		t := compileTask(spec, st.PromptsDir, ds, l.fieldWhere(layers, spec.Line), l.items)
		t.Data = data
		t.Fixture = spec.Fixture != ""
		checkMatch(spec, t, ds, spec.Line, "dataset.match")
		t.faulty = len(*ds) > mark
		if layers[0].file != l.runFile {
			t.From = strings.TrimSuffix(filepath.Base(layers[0].file), filepath.Ext(layers[0].file))
		}
		if spec.Demos != "" {
			// The demonstrations are part of every prompt of the task.
			p := promptFile(st.PromptsDir, spec.Demos)
			if data, err := os.ReadFile(p); err == nil {
				l.files[p] = data
			}
		}
		fixtureAt[t] = [2]any{n.Line, path}
		st.Tasks = append(st.Tasks, t)
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
		l.noteFactors(spec, layers)
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
	l.resolveFactors(st)
	l.expandSweeps(st)
	expandRepeats(st)
	if !rf.Settings.AllowFixtures && !o.AllowFixtures {
		used := map[*Task]bool{}
		for _, c := range st.Cells {
			used[c.Task] = true
		}
		for _, t := range st.Tasks {
			if t.Fixture && used[t] {
				at := fixtureAt[t]
				ds.Addf(runFile, at[0].(int), at[1].(string), t.Spec.Fixture+"; or, for a test or a demo, set settings.allow_fixtures: true",
					"task %s reads invented fixture data (%s), not the real dataset", t.Name, t.Spec.Dataset.Path)
			}
		}
	}
	blocks := map[string]int{}
	for i, mn := range rf.Metrics {
		if mn.Config == nil {
			continue
		}
		base := mn.Config.Common()
		b := &MetricBuild{Diags: ds, File: runFile, Index: i, Study: st, Base: base, Lines: l.lines[runFile]}
		if base.Name != "" {
			if why := IdentProblem(base.Name); why != "" {
				b.Errf("name", IdentHint, "metric block name %s %s: it names the block's CSV files in the output folder", Clip(base.Name, 40), why)
			}
		}
		if j, dup := blocks[base.BlockName()]; dup {
			b.Errf("name", fmt.Sprintf("give this block or metrics[%d] a name: of its own", j), "a second metric block named %q (the block column of metrics.parquet must tell them apart)", base.BlockName())
		}
		blocks[base.BlockName()] = i
		if m := mn.Config.Build(b); m != nil {
			checkReduce(b, m)
			st.Metrics = append(st.Metrics, m)
			st.Blocks = append(st.Blocks, base)
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
		checkHasCases(st, root, ds)
	}
	// The dry run leaves out what did not compile (dryRun), so it runs
	// whatever else was reported: a template problem shows in the same
	// pass as a provider typo elsewhere in the file.
	dryRun(st, ds)
	// The output folder, like every path in a run file, is relative to the
	// run file, never to the working directory: plan, apply and diff from
	// any folder see the same journal. The default is out/<name> in the
	// project folder: the run file's folder, or its parent when the run
	// file is in a folder named configs (the repository's layout:
	// configs/x.yaml writes out/<name> beside configs/). Where the prompts
	// come from plays no part: paths.prompts pointing into another clone
	// never sends the output there.
	switch {
	case rf.Output != "" && filepath.IsAbs(rf.Output):
		st.OutDir = filepath.Clean(rf.Output)
	case rf.Output != "":
		st.OutDir = filepath.Join(l.dir, rf.Output)
	case rf.Name != "":
		st.OutDir = filepath.Join(projectDir(runFile), "out", rf.Name)
	}
	names := make([]string, 0, len(l.files))
	for f := range l.files {
		names = append(names, f)
	}
	sort.Strings(names)
	st.ConfigHash = configHash(withRunFileForResults(st, root, l.files))
	st.Files = names
	st.ResultsKey = resultsKey(st, root, l.files)
	st.Notes = append(st.Notes, varsFileNotes(st, l.files)...)
	return st
}

// collectTemplates adds the template files a strategy reads to the config
// hash, so editing a prompt changes the hash.
func (l *loader) collectTemplates(s *Strategy) {
	for _, n := range s.Nodes {
		if tf, ok := n.Config.(interface{ TemplateFiles() []string }); ok {
			for _, f := range tf.TemplateFiles() {
				p := promptFile(l.path(l.paths.Prompts, "../prompts"), f)
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
	n = yamlstrict.ResolveAlias(n)
	switch n.Kind {
	case yaml.ScalarNode:
		return l.fileLayer(l.runFile, n, n.Value, path, dir, what)
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
		base := l.fileLayer(l.runFile, useNode, use, path+".use", dir, what)
		if base == nil {
			return nil
		}
		over := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column, Content: rest}
		return append(base, layer{l.runFile, over, path})
	}
	l.ds.Addf(l.runFile, n.Line, path, fmt.Sprintf("write a %s name or a mapping", what), "expected a %s name or mapping, got %s", what, yamlstrict.KindName(n))
	return nil
}

// fileLayer loads the file a bare name refers to; from is the file that
// names it, where a problem is reported.
func (l *loader) fileLayer(from string, at *yaml.Node, name, path, dir, what string) []layer {
	if name == "" || strings.ContainsAny(name, `/\`) && !strings.HasSuffix(name, ".yaml") {
		l.ds.Addf(from, at.Line, path, "", "bad %s name %q", what, name)
		return nil
	}
	file := filepath.Join(dir, name)
	if !strings.HasSuffix(file, ".yaml") && !strings.HasSuffix(file, ".yml") {
		file += ".yaml"
	}
	node, ok := l.read(file)
	if ok {
		return []layer{{file, node, ""}}
	}
	if _, err := os.Stat(file); err == nil {
		return nil // there, but not readable YAML: reported already
	}
	// Then the shipped library.
	libDir, field := libraryFolder(what)
	if libDir != "" {
		lib, found, err := libraryFile(libDir + "/" + filepath.Base(file))
		if err != nil {
			l.ds.Addf(from, at.Line, path, "check that the cache folder can be written, or copy the file into the study's folder", "%s %q is in the shipped library, which cannot be written out: %v", what, name, err)
			return nil
		}
		if found {
			if node, ok := l.read(lib); ok {
				return []layer{{lib, node, ""}}
			}
			return nil
		}
	}
	hint := fmt.Sprintf("create %s, declare the %s inline, or set %s to the folder that holds it", displayPath(file), what, field)
	own := yamlNames(dir)
	if d := yamlstrict.DidYouMean(name, append(own, promoral.Names(libDir)...)); d != "" {
		hint = d + " Or " + hint
	} else if len(own) > 0 {
		hint = yamlstrict.NameHint(name, own, hint)
	}
	l.ds.Addf(from, at.Line, path, hint, "%s %q not found in %s nor in the shipped library", what, name, displayPath(dir)+string(filepath.Separator))
	return nil
}

// projectDir is the folder a run file's default output (out/<name>) is in:
// the run file's folder, or its parent when that folder is named configs.
func projectDir(runFile string) string {
	dir := filepath.Dir(runFile)
	if abs, err := filepath.Abs(dir); err == nil && filepath.Base(abs) == "configs" {
		return filepath.Join(dir, "..")
	}
	return dir
}

// displayPath is a path as an error names it: relative to the working
// directory when it lies below it.
func displayPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			if r, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
	}
	return p
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

// enumOf is the closed set a field of a config struct declares (its enum
// tag), so validation and the schema read one list.
func enumOf(t reflect.Type, field string) []string {
	for _, f := range yamlstrict.Fields(t) {
		if f.Name == field {
			return f.Enum
		}
	}
	return nil
}

// providerKinds is the provider field's closed set, from its enum tag (the
// schema reads the same list).
var providerKinds = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range enumOf(reflect.TypeOf(ModelSpec{}), "provider") {
		m[p] = true
	}
	return m
}()

func (l *loader) compileModel(spec *ModelSpec, path string) *Model {
	m := &Model{Spec: spec, Name: spec.Name}
	fpath := func(field string) string {
		if spec.File == l.runFile {
			return path + "." + field
		}
		return field
	}
	if !providerKinds[spec.Provider] {
		// Decoding reported the provider (its enum tag). The URL does
		// not depend on the provider: report it in the same pass.
		checkBaseURL(spec.BaseURL, spec.File, l.line(spec.File, fpath("base_url"), spec.Line), path+".base_url", l.ds)
		return nil
	}
	m.Identity = spec.Provider + "|" + strings.TrimRight(spec.BaseURL, "/")
	if spec.KeyEnv != "" && (!secret.IsEnvName(spec.KeyEnv) || secret.LooksLikeHexKey(spec.KeyEnv)) {
		// Not repeated: whatever was pasted here may be a key.
		l.ds.Addf(spec.File, l.line(spec.File, fpath("key_env"), spec.Line), path+".key_env",
			"name the environment variable that holds the key (e.g. TOGETHER_API_KEY) and put the key itself in .env or the environment",
			"key_env must be the name of an environment variable (letters, digits and _), and this value is not one (it is not shown here)")
	}
	if spec.Provider == "openai-compatible" && spec.BaseURL == "" {
		l.ds.Addf(spec.File, l.line(spec.File, fpath("provider"), spec.Line), path+".base_url",
			"add base_url: the server's URL including its version path, e.g. http://127.0.0.1:8000/v1",
			"an openai-compatible model needs a base_url")
	}
	checkBaseURL(spec.BaseURL, spec.File, l.line(spec.File, fpath("base_url"), spec.Line), path+".base_url", l.ds)
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
		h := sha256.Sum256([]byte(JSONString(spec.Script)))
		m.Identity += "|" + hex.EncodeToString(h[:8])
	} else if spec.Provider == "simulated" {
		if !l.simulatedModel(m, spec, path) {
			return nil
		}
	} else if spec.Provider == "none" {
		m.Provider = noCalls{spec.Name}
	} else if spec.Script != nil {
		l.ds.Addf(spec.File, spec.Line, path+".script", "remove it, or set provider: scripted", "script only applies to provider scripted")
	}
	if spec.Simulate != nil && spec.Provider != "simulated" {
		l.ds.Addf(spec.File, l.line(spec.File, fpath("simulate"), spec.Line), path+".simulate", "remove it, or set provider: simulated", "simulate only applies to provider simulated")
	}
	switch spec.Limits.Mode {
	case "", ModeLive:
	case ModeBatch:
		if spec.Provider == "scripted" || spec.Provider == "simulated" || spec.Provider == "none" {
			l.ds.Addf(spec.File, l.line(spec.File, fpath("limits.mode"), spec.Line), path+".limits.mode", "remove it: only openai, openai-compatible, anthropic and gemini models have batch APIs", "provider %s has no batch mode", spec.Provider)
		}
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
		if m == nil && js.Model != "" {
			l.ds.Addf(file, l.line(t.File, "judge.model", line), "judge.model", yamlstrict.NameHint(js.Model, st.ModelNames(), "declare the judge model under models in the run file"), "no model %q for the judge", js.Model)
		}
		s, ok := judges[js.Strategy]
		if !ok {
			layers := l.fileLayer(file, &yaml.Node{Line: l.line(t.File, "judge.strategy", line)}, js.Strategy, "judge.strategy", l.path(l.paths.Strategies, "strategies"), "strategy")
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
		if m == nil && js.Model == "" && s != nil {
			// A judge that makes no call needs no model; one that does must
			// name it.
			if calls := callStages(s); len(calls) > 0 {
				l.ds.Addf(file, line, "judge.model", "name a model declared under models in the run file",
					"judge strategy %s calls a model (stage %s) but the judge names none", s.Name, calls[0])
			} else {
				m = &Model{Spec: &ModelSpec{Name: "(no judge model)", Provider: "none"}, Name: "(no judge model)", Identity: "none|judge",
					Provider: noCalls{"(no judge model)"}, Env: map[string]any{"name": "", "id": "", "provider": "none", "vars": map[string]any{}}}
			}
		}
		if m != nil {
			t.Judge = &TaskJudge{Strategy: s, Model: m}
		}
	}
}

// callStages names the stages of a strategy that call a model.
func callStages(s *Strategy) []string {
	var out []string
	for _, n := range s.Nodes {
		if _, ok := n.Stage.(CallPlanner); ok {
			out = append(out, n.Base.Name)
		}
	}
	return out
}

func (l *loader) resolveMatrix(st *Study, root *yaml.Node) {
	rf := st.Run
	file := l.runFile
	line := fieldLine(root, "matrix")
	blocks := rf.Matrix
	if len(blocks) == 0 {
		blocks = Matrix{{}}
	}
	l.checkAppliesTo(st)
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
		// A block written as a single mapping is decoded at "matrix".
		at := func(field string) int {
			for _, p := range []string{path + "." + field, "matrix." + field} {
				if n, found := l.lines[file][p]; found {
					return n
				}
			}
			return line
		}
		check := func(field, name string, exists bool, known []string, what, under string) {
			if !exists {
				l.ds.Addf(file, at(field), path+"."+field, yamlstrict.NameHint(name, known, "name a "+what+" declared under "+under), "no %s %q", what, name)
				ok = false
			}
		}
		for i, n := range b.Models {
			check(fmt.Sprintf("models[%d]", i), n, st.Model(n) != nil, st.ModelNames(), "model", "models")
		}
		for i, n := range b.Strategies {
			check(fmt.Sprintf("strategies[%d]", i), n, st.Strategy(n) != nil, st.StrategyNames(), "strategy", "strategies")
		}
		for i, n := range b.Tasks {
			check(fmt.Sprintf("tasks[%d]", i), n, st.Task(n) != nil, st.TaskNames(), "task", "tasks")
		}
		// A misspelt exclusion would silently exclude nothing.
		for i, c := range b.Exclude {
			ex := fmt.Sprintf("exclude[%d].", i)
			if c.Model != "" {
				check(ex+"model", c.Model, st.Model(c.Model) != nil, st.ModelNames(), "model", "models")
			}
			if c.Strategy != "" {
				check(ex+"strategy", c.Strategy, st.Strategy(c.Strategy) != nil, st.StrategyNames(), "strategy", "strategies")
			}
			if c.Task != "" {
				check(ex+"task", c.Task, st.Task(c.Task) != nil, st.TaskNames(), "task", "tasks")
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
					st.Cells = append(st.Cells, ResolvedCell{Model: st.Model(mn), Strategy: s, Task: t})
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
		if a == t.Name || (t.Spec.Type != "" && a == t.Spec.Type) || (t.From != "" && a == t.From) {
			return true
		}
	}
	return false
}

// checkAppliesTo catches a misspelt applies_to entry, which would otherwise
// quietly leave the strategy out of every default matrix cell. An entry
// naming a task this run does not load is fine when a task file of that
// name exists (strategy files are shared between studies); one a typo away
// from a task or a type is not.
func (l *loader) checkAppliesTo(st *Study) {
	known := append(st.TaskNames(), "label", "letter", "judge", "none")
	known = append(known, yamlNames(l.path(l.paths.Tasks, "tasks"))...)
	known = append(known, promoral.Names(promoral.LibTasks)...)
	for _, s := range st.Strategies {
		for i, a := range s.Spec.AppliesTo {
			if slices.Contains(known, a) {
				continue
			}
			if d := yamlstrict.DidYouMean(a, known); d != "" {
				field := fmt.Sprintf("applies_to[%d]", i)
				l.ds.Addf(s.Spec.File, l.line(s.Spec.File, field, s.Spec.Line), field, d, "applies_to names %q, which is neither a task of this run nor a task type", a)
			}
		}
	}
}

// configHash identifies a config by what its files say, not where they
// are: the same run file, strategies, tasks and templates give the same
// hash from any folder (a copy of the project, the built-in quickstart).
// Each file enters as its base name and content, in a fixed order.
func configHash(files map[string][]byte) string {
	type entry struct{ name, sum string }
	es := make([]entry, 0, len(files))
	for f, data := range files {
		sum := sha256.Sum256(data)
		es = append(es, entry{filepath.Base(f), hex.EncodeToString(sum[:])})
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].name != es[j].name {
			return es[i].name < es[j].name
		}
		return es[i].sum < es[j].sum
	})
	h := sha256.New()
	for _, e := range es {
		fmt.Fprintf(h, "%s\x00%s\x00", e.name, e.sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}
