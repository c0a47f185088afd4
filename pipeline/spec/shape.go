package spec

// CallShape is a strategy's static call structure: which stages call a
// model, and how many calls a case makes at best (every loop taken once)
// and at worst (every loop at its max_visits bound). Plan prices cases
// with it; the live display paces them.
type CallShape struct {
	// Calls are the node indexes of the stages that call a model
	// (CallPlanner), in the strategy's order.
	Calls []int
	// BestVisits and WorstVisits are, per node index of Calls, the
	// visits the best and the worst case make to it.
	BestVisits, WorstVisits map[int]int
	// Best and Worst are the calls of a whole case: the sums of
	// BestVisits and WorstVisits.
	Best, Worst int
}

// ShapeOf works out a strategy's CallShape from its graph: the best case
// is the path to end that enters the fewest calling stages, the worst
// visits every calling stage of a loop as often as the loop's largest
// max_visits allows (a stage's own max_visits bounding it further).
func ShapeOf(s *Strategy) *CallShape {
	sh := &CallShape{WorstVisits: map[int]int{}, BestVisits: map[int]int{}}
	comp := sccs(s)
	for i, n := range s.Nodes {
		if _, ok := n.Stage.(CallPlanner); !ok {
			continue
		}
		sh.Calls = append(sh.Calls, i)
		mult := 1
		if comp.cyclic[comp.id[i]] {
			for k, m := range s.Nodes {
				if comp.id[k] == comp.id[i] && m.Base.MaxVisits > mult {
					mult = m.Base.MaxVisits
				}
			}
		}
		if n.Base.MaxVisits > 0 && n.Base.MaxVisits < mult {
			mult = n.Base.MaxVisits
		}
		sh.WorstVisits[i] = mult
		sh.Worst += mult
	}
	// Best: the path to end that makes the fewest calls (loops once).
	path := fewestCalls(s)
	for _, i := range path {
		if _, ok := s.Nodes[i].Stage.(CallPlanner); ok {
			sh.BestVisits[i]++
			sh.Best++
		}
	}
	return sh
}

type sccResult struct {
	id     []int
	cyclic map[int]bool
}

// sccs finds strongly connected components (Tarjan) over the stage graph.
func sccs(s *Strategy) sccResult {
	n := len(s.Nodes)
	index := make([]int, n)
	low := make([]int, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	res := sccResult{id: make([]int, n), cyclic: map[int]bool{}}
	var stack []int
	counter, comps := 0, 0
	var strong func(v int)
	strong = func(v int) {
		index[v], low[v] = counter, counter
		counter++
		stack = append(stack, v)
		on[v] = true
		self := false
		for _, w := range s.succ(v) {
			if w < 0 {
				continue
			}
			if w == v {
				self = true
			}
			if index[w] < 0 {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			size := 0
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				res.id[w] = comps
				size++
				if w == v {
					break
				}
			}
			res.cyclic[comps] = size > 1 || self
			comps++
		}
	}
	for v := 0; v < n; v++ {
		if index[v] < 0 {
			strong(v)
		}
	}
	return res
}

// fewestCalls returns the node path from the first stage to end that enters
// the fewest call-making stages (0-1 BFS over the graph's ordinary edges).
func fewestCalls(s *Strategy) []int {
	n := len(s.Nodes)
	if n == 0 {
		return nil
	}
	const inf = 1 << 30
	dist := make([]int, n)
	prev := make([]int, n)
	for i := range dist {
		dist[i], prev[i] = inf, -2
	}
	cost := func(i int) int {
		if _, ok := s.Nodes[i].Stage.(CallPlanner); ok {
			return 1
		}
		return 0
	}
	dist[0] = cost(0)
	prev[0] = -1
	deque := []int{0}
	bestEnd, endFrom := inf, -1
	for len(deque) > 0 {
		v := deque[0]
		deque = deque[1:]
		for _, w := range s.succ(v) {
			if w < 0 {
				if dist[v] < bestEnd {
					bestEnd, endFrom = dist[v], v
				}
				continue
			}
			if d := dist[v] + cost(w); d < dist[w] {
				dist[w], prev[w] = d, v
				if cost(w) == 0 {
					deque = append([]int{w}, deque...)
				} else {
					deque = append(deque, w)
				}
			}
		}
	}
	var path []int
	for v := endFrom; v >= 0; v = prev[v] {
		path = append([]int{v}, path...)
	}
	return path
}
