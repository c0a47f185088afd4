package yamlstrict

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// NodeDecoder is implemented by config types that accept more than one YAML
// shape (for example "a name or an inline definition"). The strict decoder
// hands them the raw node so they can pick a shape and keep line numbers.
type NodeDecoder interface {
	DecodeNode(d *Decoder, n *yaml.Node, path string)
}

// Decoder decodes YAML nodes into Go structs strictly: unknown fields, wrong
// types and missing required fields become diagnostics with the file, line
// and dotted field path. It never stops at the first problem.
//
// Struct fields are described by tags: `yaml:"name,omitempty"` (",inline"
// embeds), `doc:"..."` (used by the JSON Schema), `required:"true"`,
// `enum:"a,b"` (the values the field takes), `min:""` and `max:""` (bounds
// of a number) and `default:""` (what a field left out holds; see
// ApplyDefaults).
type Decoder struct {
	File  string
	Diags *Diags
	// Overlay skips required-field checks: the mapping only overrides
	// fields of a value decoded before it.
	Overlay bool
	// Lines, when set, receives the line of every field path decoded, so
	// later semantic checks can point at the exact line.
	Lines map[string]int
	// nodes counts the nodes decoded: aliases can make a small file
	// expand without end (a "billion laughs"), which must stop.
	nodes int
	errs  int
}

// maxNodes bounds what one file may expand to through aliases; maxErrs
// bounds the problems listed for one file.
const (
	maxNodes = 1_000_000
	maxErrs  = 200
)

// NewDecoder returns a decoder that reports into ds.
func NewDecoder(file string, ds *Diags) *Decoder { return &Decoder{File: file, Diags: ds} }

// Errf records a diagnostic at node n.
func (d *Decoder) Errf(n *yaml.Node, path, hint, format string, args ...any) {
	if d.errs++; d.errs > maxErrs {
		if d.errs == maxErrs+1 {
			d.Diags.Addf(d.File, 0, "", "fix these first", "more than %d problems in this file; the rest are not listed", maxErrs)
		}
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	d.Diags.Addf(d.File, line, path, hint, format, args...)
}

// Decode fills v (a pointer) from n.
func (d *Decoder) Decode(n *yaml.Node, v any, path string) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("pipeline: Decode needs a non-nil pointer")
	}
	d.decode(n, rv.Elem(), path)
}

var (
	DurationType    = reflect.TypeOf(time.Duration(0))
	nodeDecoderType = reflect.TypeOf((*NodeDecoder)(nil)).Elem()
	yamlNodeType    = reflect.TypeOf(yaml.Node{})
)

func ResolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return ResolveAlias(n.Content[0])
	}
	return n
}

func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func (d *Decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	n = ResolveAlias(n)
	if n == nil {
		return
	}
	if d.nodes++; d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.Errf(n, path, "use fewer, shallower aliases (&name / *name)", "the file expands to more than %d values through its aliases", maxNodes)
		}
		return
	}
	if d.Lines != nil {
		if _, ok := d.Lines[path]; !ok {
			d.Lines[path] = n.Line
		}
	}
	if v.Type() == yamlNodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(nodeDecoderType) {
		v.Addr().Interface().(NodeDecoder).DecodeNode(d, n, path)
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // leave the zero value
	}
	if d.refuseKey(n, path) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.Errf(n, path, "write a YAML list (- item)", "expected a list, got %s", KindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.Errf(n, path, "write key: value pairs", "expected a mapping, got %s", KindName(n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			kv := reflect.New(v.Type().Key()).Elem()
			d.decode(k, kv, path)
			ev := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, ev, JoinPath(path, k.Value))
			v.SetMapIndex(kv, ev)
		}
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.Errf(n, path, "", "%v", cleanYAMLErr(err))
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		d.decodeScalar(n, v, path)
	}
}

func (d *Decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.Errf(n, path, "", "expected %s, got %s", typeName(v.Type()), KindName(n))
		return
	}
	if v.Type() == DurationType {
		dur, err := time.ParseDuration(n.Value)
		if err != nil {
			d.Errf(n, path, "write a duration like 30s, 2m or 500ms", "%q is not a duration", n.Value)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
		return
	case reflect.Bool:
		if n.Tag != "!!bool" {
			d.Errf(n, path, "write true or false", "expected true or false, got %q", n.Value)
			return
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Tag != "!!int" {
			d.Errf(n, path, "write a whole number", "expected a whole number, got %q", n.Value)
			return
		}
	case reflect.Float32, reflect.Float64:
		if n.Tag != "!!int" && n.Tag != "!!float" {
			d.Errf(n, path, "write a number", "expected a number, got %q", n.Value)
			return
		}
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		d.Errf(n, path, "", "%v", cleanYAMLErr(err))
	}
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	}
	return t.String()
}

func cleanYAMLErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	return strings.TrimSpace(s)
}

func JoinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// FieldInfo describes one YAML field of a config struct, as read from its tags.
type FieldInfo struct {
	Name     string
	Doc      string
	Required bool
	Index    []int
	Type     reflect.Type
	// Enum is the closed set of values the field takes (tag enum:"a,b"):
	// decoding rejects any other value written; nil when the field is open.
	Enum []string
	// Default is the value decoding gives the field when it is left out,
	// null or written as its type's zero value (tag default:""); "" for
	// none. Inherit names the setting a field left out takes its value
	// from once the study is loaded (tag inherit:"settings.unparsed"):
	// decoding leaves such a field empty.
	Default, Inherit string
	// Min and Max bound a number written in the field (tags min:"" and
	// max:""); nil when unbounded. A field left out is not checked.
	Min, Max *float64
}

// Fields lists the YAML fields of struct type t, following ",inline" embeds.
func Fields(t reflect.Type) []FieldInfo {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []FieldInfo
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			if strings.Contains(opts, "inline") {
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				walk(ft, idx)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fi := FieldInfo{
				Name:     name,
				Doc:      f.Tag.Get("doc"),
				Required: f.Tag.Get("required") == "true",
				Index:    idx,
				Type:     f.Type,
				Min:      tagFloat(f.Tag.Get("min")),
				Max:      tagFloat(f.Tag.Get("max")),
				Default:  f.Tag.Get("default"),
				Inherit:  f.Tag.Get("inherit"),
			}
			if e := f.Tag.Get("enum"); e != "" {
				fi.Enum = strings.Split(e, ",")
			}
			out = append(out, fi)
		}
	}
	walk(t, nil)
	return out
}

func (d *Decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.Errf(n, path, "write key: value pairs", "expected a mapping, got %s", KindName(n))
		return
	}
	fields := Fields(v.Type())
	byName := make(map[string]FieldInfo, len(fields))
	for _, f := range fields {
		byName[f.Name] = f
	}
	seen := map[string]bool{}
	for _, kv := range MappingPairs(n) {
		k, val := kv[0], kv[1]
		f, ok := byName[k.Value]
		if !ok {
			d.Errf(k, JoinPath(path, k.Value), suggest(k.Value, fields), "unknown field %q", k.Value)
			continue
		}
		if seen[k.Value] {
			d.Errf(k, JoinPath(path, k.Value), "remove one of them", "field %q is given twice", k.Value)
		}
		seen[k.Value] = true
		if d.Lines != nil {
			d.Lines[JoinPath(path, k.Value)] = k.Line
		}
		fv := fieldByIndexAlloc(v, f.Index)
		before := d.errs
		d.decode(val, fv, JoinPath(path, k.Value))
		if d.errs == before { // a value that did not decode is not checked against its bounds too
			d.checkField(k, val, fv, f, JoinPath(path, k.Value))
		}
	}
	for _, f := range fields {
		if f.Required && !seen[f.Name] && !d.Overlay {
			d.Errf(n, JoinPath(path, f.Name), "add it", "required field %q is missing", f.Name)
		}
	}
	applyDefaults(v, fields, seen)
}

// mappingPairs returns the key/value pairs of a mapping, expanding YAML merge
// keys (<<: *anchor) so shared defaults can be written once.
func MappingPairs(n *yaml.Node) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	var merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "<<" && k.Tag == "!!merge" {
			src := ResolveAlias(v)
			var srcs []*yaml.Node
			if src.Kind == yaml.SequenceNode {
				for _, c := range src.Content {
					srcs = append(srcs, ResolveAlias(c))
				}
			} else {
				srcs = []*yaml.Node{src}
			}
			for _, s := range srcs {
				if s.Kind == yaml.MappingNode {
					merged = append(merged, MappingPairs(s)...)
				}
			}
			continue
		}
		out = append(out, [2]*yaml.Node{k, v})
	}
	// Explicit keys win over merged ones.
	for _, m := range merged {
		dup := false
		for _, o := range out {
			if o[0].Value == m[0].Value {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, m)
		}
	}
	return out
}

func fieldByIndexAlloc(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// suggest proposes the closest known field name for a typo, else lists
// the fields there are.
func suggest(name string, fields []FieldInfo) string {
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		names = append(names, f.Name)
	}
	if s := DidYouMean(name, names); s != "" {
		return s
	}
	sort.Strings(names)
	return "known fields: " + strings.Join(names, ", ")
}

// ParseYAML reads one YAML document, turning a syntax error into a diagnostic
// at the line where the text stops being YAML (see syntaxLine).
func ParseYAML(file string, data []byte, ds *Diags) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		ds.Add(SyntaxDiag(file, data, err))
		return nil
	}
	if len(doc.Content) == 0 {
		ds.Addf(file, 0, "", "write the config in it", "the file is empty")
		return nil
	}
	checkOneDocument(file, data, ds)
	if root := doc.Content[0]; root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		// "---" alone, "~" or "null": a document with nothing in it.
		ds.Addf(file, doc.Line, "", "write the config in it (a file of only \"---\" or null holds none)", "the file holds an empty YAML document")
		return nil
	}
	return doc.Content[0]
}

// SyntaxDiag turns yaml.v3's syntax error on data into a diagnostic at the
// line of the fault, quoting that line and saying what usually causes the
// message.
func SyntaxDiag(file string, data []byte, err error) Diag {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	reported := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, _ := fmt.Sscanf(rest, "%d", &reported); n == 1 {
			if _, after, ok := strings.Cut(rest, ": "); ok {
				msg = after
			}
		}
	}
	line := syntaxLine(data)
	if line == 0 {
		line = reported
	}
	d := Diag{File: file, Line: line, Msg: "malformed YAML: " + msg, Hint: syntaxHint(msg)}
	lines := strings.Split(string(data), "\n")
	if line > 0 && line <= len(lines) {
		text := strings.TrimRight(lines[line-1], "\r")
		if len(text) > 60 {
			text = text[:57] + "..."
		}
		d.Msg = fmt.Sprintf("malformed YAML at %q: %s", text, msg)
	}
	return d
}

// maxSyntaxScan bounds the prefix scan below; past it the file is large
// enough that re-parsing every prefix would be slow, and yaml.v3's own line
// is used.
const maxSyntaxScan = 5000

// syntaxLine finds the line where data stops being YAML: one past the longest
// prefix of whole lines that parses. yaml.v3 reports parser errors at the
// start of the enclosing block (and 0-based), so a list item mis-indented on
// line 5 of a list that opens on line 3 is reported as "line 2"; its own
// parser offers no other position. A prefix of a well-formed document is
// well-formed except inside an open bracket or quote, so scanning from the
// end for the last prefix that parses lands on the faulty line. It returns 0
// when no line can be blamed (the whole text parses, or it is too long).
func syntaxLine(data []byte) int {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > maxSyntaxScan {
		return 0
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil {
		return 0
	}
	size := len(data)
	for k := len(lines) - 1; k >= 0; k-- {
		size -= len(lines[k])
		if yaml.Unmarshal(data[:size], &doc) == nil {
			return k + 1
		}
	}
	return 1
}

// syntaxHint says what usually causes each of yaml.v3's syntax messages.
func syntaxHint(msg string) string {
	switch {
	case strings.Contains(msg, "tab character"):
		return "indent with spaces, not tabs"
	case strings.Contains(msg, "expected '-' indicator"):
		return "every item of a list starts with '-' at the same indentation; this line is indented like an item but is not one"
	case strings.Contains(msg, "expected key"):
		return "this line's indentation does not line up with the keys of its mapping"
	case strings.Contains(msg, "expected ',' or ']'"):
		return "a [ list opened on this line is not closed, or its items need commas"
	case strings.Contains(msg, "expected ',' or '}'"):
		return "a { mapping opened on this line is not closed, or its pairs need commas"
	case strings.Contains(msg, "mapping values are not allowed"):
		return "a 'key: value' where a plain value belongs: indent it under a key, or quote a value that contains ': '"
	case strings.Contains(msg, "end of stream"):
		return "a quote or bracket opened on this line is never closed"
	case strings.Contains(msg, "could not find expected ':'"):
		return "a key on this line has no ':' after it"
	case strings.Contains(msg, "cannot start any token"):
		return "quote a value that starts with @ or `"
	}
	return "fix the YAML syntax"
}
