package spec

import (
	"io"
	"sync"
	"text/template"
	"text/template/parse"
)

// Most prompt and wording templates are text and {{.a.b}} field chains
// (`{{.task.scenario}}`), run once per case. text/template walks them by
// reflection; ExecTemplate looks the fields up in the maps directly when
// every one of them is a string, and otherwise (a missing key, another type,
// any other kind of node) leaves the whole template to text/template, having
// written nothing, so output and errors are text/template's own.
func ExecTemplate(t *template.Template, w io.Writer, data any) error {
	p := planOf(t)
	if p == nil {
		return t.Execute(w, data)
	}
	root, ok := data.(map[string]any)
	if !ok {
		return t.Execute(w, data)
	}
	var vals [8]string
	got := vals[:0]
	for _, part := range p.parts {
		if part.path == nil {
			continue
		}
		s, ok := lookupString(root, part.path)
		if !ok {
			return t.Execute(w, data)
		}
		got = append(got, s)
	}
	k := 0
	for _, part := range p.parts {
		s := part.text
		if part.path != nil {
			s, k = got[k], k+1
		}
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
	}
	return nil
}

func lookupString(m map[string]any, path []string) (string, bool) {
	for i, name := range path {
		v, ok := m[name]
		if !ok {
			return "", false
		}
		if i == len(path)-1 {
			s, ok := v.(string)
			return s, ok
		}
		if m, ok = v.(map[string]any); !ok {
			return "", false
		}
	}
	return "", false
}

type tmplPart struct {
	text string
	path []string // a field chain; nil for text
}

type tmplPlan struct{ parts []tmplPart }

var plans sync.Map // *template.Template -> *tmplPlan (nil: no fast path)

func planOf(t *template.Template) *tmplPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*tmplPlan)
	}
	p := makePlan(t)
	plans.Store(t, p)
	return p
}

func makePlan(t *template.Template) *tmplPlan {
	if t.Tree == nil || t.Tree.Root == nil {
		return nil
	}
	p := &tmplPlan{}
	for _, n := range t.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			p.parts = append(p.parts, tmplPart{text: string(n.Text)})
		case *parse.ActionNode:
			if n.Pipe == nil || len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 1 {
				return nil
			}
			f, ok := n.Pipe.Cmds[0].Args[0].(*parse.FieldNode)
			if !ok || len(f.Ident) == 0 {
				return nil
			}
			p.parts = append(p.parts, tmplPart{path: f.Ident})
		default:
			return nil
		}
	}
	return p
}
