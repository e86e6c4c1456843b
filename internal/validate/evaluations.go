package validate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// measureEvaluations bounds, from the compiled schema alone, how many subschemas one value of any instance
// can be checked against (see MaxEvaluations), refuses the schema when that is beyond the limit or
// unbounded, and returns the bound. It never validates anything, so it costs the same whatever the schema
// would make validation cost. Its own steps count against the compile cost (unitsPerStep each), which is
// cost so far and limit at most: it is cheap for every schema we know, but its cost, too, must not depend
// on the schema's good will.
//
// The model. Subschemas evaluated at the same value as their parent — through $ref, allOf, anyOf, oneOf,
// not, if/then/else, the dependent schemas, $dynamicRef and $recursiveRef — are "in place"; the others
// (properties, items, …) apply to the values inside, and are "entries": they start the evaluation of a
// value. A value is checked against E(s) subschemas for each entry s that applies to it, E(s) being the
// number of in-place paths from s. The entries that apply to the value under key k are those that the
// members of the in-place closure of its parent's entries apply to k, counted once per path. Keys are told
// apart: "properties" names are separate (a value is under one name), "patternProperties" apply to the
// names they match, "additionalProperties" to the names nothing else claims, object keys and array items
// never meet. Summing over the keys instead would refuse ordinary trees ({"left": node, "right": node}).
//
// A recursive schema (a cycle of entries) is accepted when, for every key, at most one of its paths stays
// in the recursion: going one level deeper then never multiplies the count, and what each level leaves
// behind is counted for as many levels as it reaches. It is refused when a key stays through two paths
// (the count doubles at each level), and when a key both stays in the recursion and starts another
// recursion (the count grows with every level of nesting). A cycle of in-place references
// ({"$ref": "#"}) validates nothing and is refused as an invalid schema.
//
// A dynamic reference resolves to the outermost declaration of its anchor in the dynamic scope: the root
// when the root declares it (validation starts there), otherwise any declaration, all of which are counted.
func measureEvaluations(root *sjs.Schema, cost, limit int64) (int64, error) {
	g := &evalGraph{nodes: map[*sjs.Schema]*evalNode{}, budget: (limit - cost) / unitsPerStep, limit: limit}
	if err := g.collect(root); err != nil {
		return 0, err
	}
	for _, n := range g.order {
		if _, err := g.expansion(n); err != nil {
			return 0, err
		}
	}
	rootNode := g.nodes[root]
	rootNode.entry = true
	for _, n := range g.order {
		if !n.entry {
			continue
		}
		if err := g.classes(n); err != nil {
			return 0, err
		}
	}
	if err := g.bound(rootNode); err != nil {
		return 0, err
	}
	return rootNode.q, nil
}

type evalGraph struct {
	nodes  map[*sjs.Schema]*evalNode
	order  []*evalNode // in the order collect met them: deterministic for a given schema
	budget int64       // steps left
	limit  int64       // the compile cost limit, for the error

	// Tarjan's strongly connected components over the entries (bound)
	index int
	stack []*evalNode
}

// evalNode is one compiled subschema.
type evalNode struct {
	s       *sjs.Schema
	ord     int // the order collect met it in
	inPlace []inPlaceEdge
	entry   bool // some subschema applies it to the values inside: it starts a location's evaluation

	// in-place expansion
	state int   // 0 unvisited, 1 on the DFS stack, 2 done
	e     int64 // in-place paths from here (itself included)

	// the entry's key classes: for each, the entries (with multiplicity) the values under such a key
	// are checked against, and the leaf evaluations (propertyNames) each such key costs
	classes []keyClass

	// bound
	index, lowlink int
	onStack        bool
	listedBy       *evalNode // the last node whose successors listed this one
	done           bool
	q              int64 // evaluations bound for one value, at any depth, when this entry applies
	height         int64 // levels of values below before the entries run out; noHeight when recursive
}

type inPlaceEdge struct {
	to *evalNode
	kw []string // the keyword's location in its subschema, for messages: ["$ref"], ["allOf", "1"]
}

func (n *evalNode) addInPlace(t *evalNode, kw ...string) {
	if t != nil {
		n.inPlace = append(n.inPlace, inPlaceEdge{to: t, kw: kw})
	}
}

type keyClass struct {
	to   map[*evalNode]int64
	leaf int64
}

const noHeight = int64(-1)

func (g *evalGraph) step(n int64) error {
	g.budget -= n
	if g.budget < 0 {
		return &LimitError{Measure: MeasureCompileCost, Measured: g.limit + 1, Limit: g.limit, msg: fmt.Sprintf(
			"the schema is too complex to compile: its compile cost passed the limit for its size, %d, while working out "+
				"what validating against it can cost; use fewer subschemas, or fewer properties and patterns in the same places",
			g.limit)}
	}
	return nil
}

func (g *evalGraph) node(s *sjs.Schema) *evalNode {
	n := g.nodes[s]
	if n == nil {
		n = &evalNode{s: s, ord: len(g.order)}
		g.nodes[s] = n
		g.order = append(g.order, n)
	}
	return n
}

// collect finds every subschema reachable from root and its in-place edges.
func (g *evalGraph) collect(root *sjs.Schema) error {
	g.node(root)
	var recursiveAnchors []*evalNode
	dynamicAnchors := map[string][]*evalNode{}
	for i := 0; i < len(g.order); i++ {
		n := g.order[i]
		s := n.s
		if err := g.step(1); err != nil {
			return err
		}
		addInPlace := func(t *sjs.Schema, kw ...string) {
			if t != nil {
				n.inPlace = append(n.inPlace, inPlaceEdge{to: g.node(t), kw: kw})
			}
		}
		addInPlace(s.Ref, "$ref")
		// Dynamic references are resolved below, once every subschema is known.
		if s.RecursiveRef != nil {
			g.node(s.RecursiveRef)
		}
		if s.DynamicRef != nil && s.DynamicRef.Ref != nil {
			g.node(s.DynamicRef.Ref)
		}
		addInPlace(s.Not, "not")
		for j, t := range s.AllOf {
			addInPlace(t, "allOf", strconv.Itoa(j))
		}
		for j, t := range s.AnyOf {
			addInPlace(t, "anyOf", strconv.Itoa(j))
		}
		for j, t := range s.OneOf {
			addInPlace(t, "oneOf", strconv.Itoa(j))
		}
		addInPlace(s.If, "if")
		addInPlace(s.Then, "then")
		addInPlace(s.Else, "else")
		for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
			addInPlace(s.DependentSchemas[k], "dependentSchemas", k)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
			if t, ok := s.Dependencies[k].(*sjs.Schema); ok {
				addInPlace(t, "dependencies", k)
			}
		}
		for _, t := range children(s) {
			g.node(t)
		}
		if s.RecursiveAnchor {
			recursiveAnchors = append(recursiveAnchors, n)
		}
		if s.DynamicAnchor != "" {
			dynamicAnchors[s.DynamicAnchor] = append(dynamicAnchors[s.DynamicAnchor], n)
		}
	}
	// Dynamic references: see measureEvaluations.
	rs := g.order[0].s
	for _, n := range g.order {
		if r := n.s.RecursiveRef; r != nil {
			switch {
			case !r.RecursiveAnchor:
				n.addInPlace(g.nodes[r], "$recursiveRef")
			case rs.RecursiveAnchor:
				n.addInPlace(g.order[0], "$recursiveRef")
			default:
				n.addInPlace(g.nodes[r], "$recursiveRef")
				for _, t := range recursiveAnchors {
					if t.s != r {
						n.addInPlace(t, "$recursiveRef")
					}
				}
			}
		}
		if d := n.s.DynamicRef; d != nil {
			switch {
			case d.Anchor == "":
				n.addInPlace(g.nodes[d.Ref], "$dynamicRef")
			case rs.DynamicAnchor == d.Anchor:
				n.addInPlace(g.order[0], "$dynamicRef")
			default:
				n.addInPlace(g.nodes[d.Ref], "$dynamicRef")
				for _, t := range dynamicAnchors[d.Anchor] {
					if t.s != d.Ref {
						n.addInPlace(t, "$dynamicRef")
					}
				}
			}
		}
		if err := g.step(int64(len(n.inPlace))); err != nil {
			return err
		}
	}
	for _, n := range g.order {
		for _, t := range children(n.s) {
			g.nodes[t].entry = true
		}
	}
	return nil
}

// children lists the subschemas s applies to the values inside the value it checks. propertyNames is
// among them only for collecting: it checks names, which have no values inside (see classes).
func children(s *sjs.Schema) []*sjs.Schema {
	var out []*sjs.Schema
	add := func(t *sjs.Schema) {
		if t != nil {
			out = append(out, t)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		add(s.Properties[k])
	}
	for _, t := range s.PatternProperties {
		add(t)
	}
	add(schemaOf(s.AdditionalProperties))
	add(s.UnevaluatedProperties)
	add(s.PropertyNames)
	switch items := s.Items.(type) {
	case *sjs.Schema:
		add(items)
	case []*sjs.Schema:
		for _, t := range items {
			add(t)
		}
	}
	add(schemaOf(s.AdditionalItems))
	for _, t := range s.PrefixItems {
		add(t)
	}
	add(s.Items2020)
	add(s.Contains)
	add(s.UnevaluatedItems)
	return out
}

func schemaOf(v any) *sjs.Schema {
	s, _ := v.(*sjs.Schema)
	return s
}

// expansion computes n.e, the number of in-place paths from n, refusing a cycle of in-place edges.
func (g *evalGraph) expansion(n *evalNode) (int64, error) {
	switch n.state {
	case 2:
		return n.e, nil
	case 1:
		return 0, errInPlaceCycle
	}
	n.state = 1
	e := int64(1)
	for _, ed := range n.inPlace {
		if err := g.step(1); err != nil {
			return 0, err
		}
		te, err := g.expansion(ed.to)
		if err == errInPlaceCycle {
			return 0, cycleError(n, ed)
		}
		if err != nil {
			return 0, err
		}
		e = satAdd(e, te)
	}
	n.state, n.e = 2, e
	if e > MaxEvaluations {
		return 0, &LimitError{Measure: MeasureEvaluations, Measured: e, Limit: MaxEvaluations, msg: fmt.Sprintf(
			"the schema fans out too much: a value checked against %s is checked against %s subschemas through its references "+
				"and combinations (allOf, anyOf, oneOf, ...); the limit is %d",
			schemaLocation(n.s), countText(e), MaxEvaluations)}
	}
	return e, nil
}

// errInPlaceCycle travels up from the subschema that closes a cycle to the edge that entered it.
var errInPlaceCycle = &SchemaError{msg: "in-place cycle"}

func cycleError(from *evalNode, ed inPlaceEdge) error {
	at := append(fragmentTokens(from.s.Location), ed.kw...)
	return schemaErrorf("invalid schema: at %s: the reference loops back to %s without validating anything",
		dotLocation(at), dotLocation(fragmentTokens(ed.to.s.Location)))
}

// schemaLocation names a subschema in messages: "the root", "the subschema at properties.a".
func schemaLocation(s *sjs.Schema) string {
	t := fragmentTokens(s.Location)
	if len(t) == 0 {
		return "the root"
	}
	return "the subschema at " + dotLocation(t)
}

func countText(n int64) string {
	if n == maxInt64 {
		return "more than 9e18"
	}
	return fmt.Sprint(n)
}

// classes computes the key classes of entry n from its in-place closure: each closure member counts as
// often as there are in-place paths to it.
func (g *evalGraph) classes(n *evalNode) error {
	closure, mult := g.closure(n)
	if err := g.step(int64(len(closure))); err != nil {
		return err
	}
	// Only the members with keywords for the values inside matter. A property name is a class of its own
	// for the members that list it and those whose other keywords may claim any name; every other name is
	// one more class.
	byName := map[string][]*evalNode{}
	var names []string
	var others, arrays []*evalNode
	maxPrefix := 0
	var leaf int64 // propertyNames: each name costs these evaluations, whatever its class
	for _, u := range closure {
		s := u.s
		for k := range s.Properties {
			if byName[k] == nil {
				names = append(names, k)
			}
			byName[k] = append(byName[k], u)
		}
		if len(s.PatternProperties) > 0 || schemaOf(s.AdditionalProperties) != nil || s.UnevaluatedProperties != nil {
			others = append(others, u)
		}
		if s.Items != nil || schemaOf(s.AdditionalItems) != nil || len(s.PrefixItems) > 0 || s.Items2020 != nil ||
			s.Contains != nil || s.UnevaluatedItems != nil {
			arrays = append(arrays, u)
			maxPrefix = max(maxPrefix, len(prefixItems(s)))
		}
		if pn := s.PropertyNames; pn != nil {
			leaf = satAdd(leaf, satMul(mult(u), g.nodes[pn].e))
		}
	}
	slices.Sort(names)
	if err := g.step(int64(len(names))*int64(len(others)+1) + int64(maxPrefix+1)*int64(len(arrays))); err != nil {
		return err
	}
	for _, name := range names {
		c := keyClass{to: map[*evalNode]int64{}, leaf: leaf}
		listing := byName[name]
		for _, u := range listing {
			if err := g.objectTargets(u.s, name, true, mult(u), c.to); err != nil {
				return err
			}
		}
		for _, u := range others {
			if !slices.Contains(listing, u) {
				if err := g.objectTargets(u.s, name, true, mult(u), c.to); err != nil {
					return err
				}
			}
		}
		n.addClass(c)
	}
	if len(others) > 0 || leaf > 0 {
		other := keyClass{to: map[*evalNode]int64{}, leaf: leaf}
		for _, u := range others {
			if err := g.objectTargets(u.s, "", false, mult(u), other.to); err != nil {
				return err
			}
		}
		n.addClass(other)
	}
	// Array items: each position some prefix names, and one class for the rest.
	if len(arrays) > 0 {
		for i := 0; i <= maxPrefix; i++ {
			c := keyClass{to: map[*evalNode]int64{}}
			for _, u := range arrays {
				g.itemTargets(u.s, i, mult(u), c.to)
			}
			n.addClass(c)
		}
	}
	return nil
}

// closure returns n's in-place closure in topological order, and the number of in-place paths from n to
// each member.
func (g *evalGraph) closure(n *evalNode) ([]*evalNode, func(*evalNode) int64) {
	if len(n.inPlace) == 0 {
		return []*evalNode{n}, func(*evalNode) int64 { return 1 }
	}
	var post []*evalNode
	seen := map[*evalNode]bool{}
	var dfs func(*evalNode)
	dfs = func(u *evalNode) {
		seen[u] = true
		for _, ed := range u.inPlace {
			if !seen[ed.to] {
				dfs(ed.to)
			}
		}
		post = append(post, u)
	}
	dfs(n)
	slices.Reverse(post)
	paths := map[*evalNode]int64{n: 1}
	for _, u := range post {
		for _, ed := range u.inPlace {
			paths[ed.to] = satAdd(paths[ed.to], paths[u])
		}
	}
	return post, func(u *evalNode) int64 { return paths[u] }
}

func (n *evalNode) addClass(c keyClass) {
	if len(c.to) > 0 || c.leaf > 0 {
		n.classes = append(n.classes, c)
	}
}

// objectTargets adds to to the subschemas s applies to the value under name (named) or under any name its
// "properties" do not list (!named), m times each.
func (g *evalGraph) objectTargets(s *sjs.Schema, name string, named bool, m int64, to map[*evalNode]int64) error {
	add := func(t *sjs.Schema) {
		if t != nil {
			to[g.nodes[t]] = satAdd(to[g.nodes[t]], m)
		}
	}
	claimed := false
	if named {
		if t, ok := s.Properties[name]; ok {
			add(t)
			claimed = true
		}
	}
	for re, t := range s.PatternProperties {
		if named {
			if err := g.step(int64(len(name)) + 1); err != nil {
				return err
			}
			if !re.MatchString(name) {
				continue
			}
		}
		add(t)
		claimed = claimed || named
	}
	if !claimed {
		add(schemaOf(s.AdditionalProperties))
	}
	add(s.UnevaluatedProperties)
	return nil
}

// itemTargets adds to to the subschemas s applies to the item at index i (or, past every prefix, to the
// rest), m times each.
func (g *evalGraph) itemTargets(s *sjs.Schema, i int, m int64, to map[*evalNode]int64) {
	add := func(t *sjs.Schema) {
		if t != nil {
			to[g.nodes[t]] = satAdd(to[g.nodes[t]], m)
		}
	}
	prefix := prefixItems(s)
	switch {
	case i < len(prefix):
		add(prefix[i])
	case s.Items2020 != nil:
		add(s.Items2020)
	default:
		if _, isArray := s.Items.([]*sjs.Schema); isArray {
			add(schemaOf(s.AdditionalItems))
		}
	}
	if t, ok := s.Items.(*sjs.Schema); ok {
		add(t)
	}
	add(s.Contains)
	add(s.UnevaluatedItems)
}

func prefixItems(s *sjs.Schema) []*sjs.Schema {
	if items, ok := s.Items.([]*sjs.Schema); ok {
		return items
	}
	return s.PrefixItems
}

// bound computes q for root (and every entry below it) over the strongly connected components of the
// entries, downstream first, and refuses the schema past MaxEvaluations.
func (g *evalGraph) bound(root *evalNode) error {
	if err := g.strongConnect(root); err != nil {
		return err
	}
	if root.q > MaxEvaluations {
		return &LimitError{Measure: MeasureEvaluations, Measured: root.q, Limit: MaxEvaluations, msg: fmt.Sprintf(
			"the schema fans out too much: one value can be checked against up to %s subschemas, through references, "+
				"combinations (allOf, anyOf, oneOf, ...) and the subschemas of the values around it; the limit is %d",
			countText(root.q), MaxEvaluations)}
	}
	return nil
}

func (g *evalGraph) successors(n *evalNode) []*evalNode {
	var out []*evalNode
	for _, c := range n.classes {
		for _, t := range sortedTargets(c.to) {
			if t.listedBy != n {
				t.listedBy = n
				out = append(out, t)
			}
		}
	}
	return out
}

// sortedTargets orders a class's targets as collect met them, so that messages do not depend on map order.
func sortedTargets(to map[*evalNode]int64) []*evalNode {
	out := slices.Collect(maps.Keys(to))
	slices.SortFunc(out, func(a, b *evalNode) int { return a.ord - b.ord })
	return out
}

// strongConnect is Tarjan's algorithm; each component is finished (q and height set) as it is found, which
// is after every component it leads to.
func (g *evalGraph) strongConnect(n *evalNode) error {
	g.index++
	n.index, n.lowlink = g.index, g.index
	g.stack = append(g.stack, n)
	n.onStack = true
	for _, t := range g.successors(n) {
		if err := g.step(1); err != nil {
			return err
		}
		switch {
		case t.index == 0:
			if err := g.strongConnect(t); err != nil {
				return err
			}
			n.lowlink = min(n.lowlink, t.lowlink)
		case t.onStack:
			n.lowlink = min(n.lowlink, t.index)
		}
	}
	if n.lowlink != n.index {
		return nil
	}
	var comp []*evalNode
	for {
		t := g.stack[len(g.stack)-1]
		g.stack = g.stack[:len(g.stack)-1]
		t.onStack = false
		comp = append(comp, t)
		if t == n {
			break
		}
	}
	return g.finish(comp)
}

// finish sets q and height for one component, whose successors outside it are finished.
func (g *evalGraph) finish(comp []*evalNode) error {
	in := map[*evalNode]bool{}
	for _, u := range comp {
		in[u] = true
	}
	recursive := len(comp) > 1
	for _, c := range comp[0].classes {
		if c.to[comp[0]] > 0 {
			recursive = true
		}
	}
	if !recursive {
		u := comp[0]
		u.q, u.height = u.e, 0
		for _, c := range u.classes {
			sum := c.leaf
			for t, m := range c.to {
				sum = satAdd(sum, satMul(m, t.q))
				if t.height == noHeight {
					u.height = noHeight
				} else if u.height != noHeight {
					u.height = max(u.height, t.height+1)
				}
			}
			u.q = max(u.q, sum)
		}
		u.done = true
		return nil
	}
	// A recursion: along any path of keys, one walk at most stays inside; the values it leaves behind are
	// counted for as many levels as the subschemas below them reach.
	var maxE, mixed, left, mixedHeight int64
	for _, u := range comp {
		maxE = max(maxE, u.e)
		for _, c := range u.classes {
			var stay, exit int64 = 0, c.leaf
			var below []*evalNode
			for t, m := range c.to {
				if in[t] {
					stay = satAdd(stay, m)
				} else {
					exit = satAdd(exit, satMul(m, t.q))
					below = append(below, t)
				}
			}
			if stay > 1 {
				return &LimitError{Measure: MeasureEvaluations, Unbounded: true, Limit: MaxEvaluations, msg: fmt.Sprintf(
					"the schema's recursion multiplies: under %s, a value one level deeper is checked against the recursive subschemas "+
						"%d times over, so the work doubles with every level of nesting; let each key lead into the recursion through one subschema only",
					schemaLocation(u.s), stay)}
			}
			if stay == 0 {
				left = max(left, exit)
				continue
			}
			mixed = max(mixed, exit)
			for _, t := range below {
				if t.height == noHeight {
					return &LimitError{Measure: MeasureEvaluations, Unbounded: true, Limit: MaxEvaluations, msg: fmt.Sprintf(
						"the schema's recursion multiplies: under %s, the same key both continues the recursion and starts %s, "+
							"another recursion, so the work grows with every level of nesting",
						schemaLocation(u.s), schemaLocation(t.s))}
				}
				mixedHeight = max(mixedHeight, t.height)
			}
		}
	}
	q := satAdd(satAdd(maxE, satMul(mixedHeight+1, mixed)), left)
	for _, u := range comp {
		u.q, u.height, u.done = q, noHeight, true
	}
	return nil
}
