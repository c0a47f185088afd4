package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/promoral/promoral/internal/wrap"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
	"github.com/spf13/cobra"
)

func newGraph() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "graph CONFIG STRATEGY",
		Short: "Draw a strategy's stage graph as Mermaid (default) or DOT",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Drawing a strategy reads no data: fixture tasks are fine here.
			st, err := loadStudyWith(args[0], spec.LoadOptions{AllowFixtures: true})
			if err != nil {
				return err
			}
			s := st.Strategy(args[1])
			if s == nil {
				names := []string{}
				for _, x := range st.Strategies {
					names = append(names, x.Name)
				}
				msg := fmt.Sprintf("no strategy %q in %s: %s", args[1], args[0], yamlstrict.NameHint(args[1], names, ""))
				return errors.New(strings.Join(wrap.Words(msg, 80-len("promoral: ")), "\n  "))
			}
			switch format {
			case "mermaid":
				writeMermaid(cmd.OutOrStdout(), s)
			case "dot":
				writeDOT(cmd.OutOrStdout(), s)
			default:
				return fmt.Errorf("unknown --format %q (use mermaid or dot)", format)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid or dot")
	return cmd
}

type edge struct{ from, to, label string }

// strategyEdges lists the graph's edges with labels: default edges plain
// (a branch's default "else"), a branch's targets "when" and the
// condition, and exhausted edges "after N".
func strategyEdges(s *spec.Strategy) []edge {
	var out []edge
	for _, n := range s.Nodes {
		for _, t := range s.Edges()[n.Base.Name] {
			label := ""
			switch {
			case n.Base.MaxVisits > 0 && t == n.Base.Exhausted: // end unless set
				label = fmt.Sprintf("after %d", n.Base.MaxVisits)
			case isDefault(n, t):
				label = "else"
			case isBranchTarget(n, t):
				label = "when"
				if c, ok := n.Config.(interface{ ConditionsTo(string) []string }); ok {
					if conds := c.ConditionsTo(t); len(conds) > 0 {
						label = "when " + strings.Join(conds, " or ")
					}
				}
			}
			out = append(out, edge{n.Base.Name, t, label})
		}
	}
	return out
}

func isDefault(n *spec.Node, t string) bool {
	d, ok := n.Config.(interface{ DefaultTarget() string })
	return ok && d.DefaultTarget() == t
}

func isBranchTarget(n *spec.Node, t string) bool {
	tg, ok := n.Config.(spec.Targets)
	if !ok {
		return false
	}
	for _, x := range tg.Targets() {
		if x == t {
			return true
		}
	}
	return false
}

func nodeLabel(n *spec.Node) string {
	l := n.Base.Name + " (" + n.Base.Kind + ")"
	if n.Base.MaxVisits > 0 {
		l += fmt.Sprintf(" ≤%d", n.Base.MaxVisits)
	}
	return l
}

func writeMermaid(w io.Writer, s *spec.Strategy) {
	fmt.Fprintf(w, "flowchart TD\n")
	for _, n := range s.Nodes {
		shape := "[%q]"
		if n.Base.Kind == "branch" {
			shape = "{%q}"
		}
		fmt.Fprintf(w, "  %s"+shape+"\n", mid(n.Base.Name), nodeLabel(n))
	}
	fmt.Fprintf(w, "  %s((end))\n", mid(spec.End))
	for _, e := range strategyEdges(s) {
		if e.label != "" {
			fmt.Fprintf(w, "  %s -->|\"%s\"| %s\n", mid(e.from), mermaidText(e.label), mid(e.to))
		} else {
			fmt.Fprintf(w, "  %s --> %s\n", mid(e.from), mid(e.to))
		}
	}
}

func writeDOT(w io.Writer, s *spec.Strategy) {
	fmt.Fprintf(w, "digraph %q {\n  rankdir=TB;\n", s.Name)
	for _, n := range s.Nodes {
		shape := "box"
		if n.Base.Kind == "branch" {
			shape = "diamond"
		}
		fmt.Fprintf(w, "  %q [label=%q, shape=%s];\n", n.Base.Name, nodeLabel(n), shape)
	}
	fmt.Fprintf(w, "  %q [shape=doublecircle];\n", spec.End)
	for _, e := range strategyEdges(s) {
		if e.label != "" {
			fmt.Fprintf(w, "  %q -> %q [label=%q];\n", e.from, e.to, e.label)
		} else {
			fmt.Fprintf(w, "  %q -> %q;\n", e.from, e.to)
		}
	}
	fmt.Fprintln(w, "}")
}

// mid makes a Mermaid-safe node id.
func mid(name string) string {
	var b strings.Builder
	b.WriteString("n_")
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// mermaidText is a label as Mermaid reads it inside quotes: its quotes
// and the characters Mermaid's entity codes start with written as codes,
// its spacing folded to single spaces.
func mermaidText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("#", "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}
