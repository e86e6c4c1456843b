package validate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// fieldLeaf is one reported error.
type fieldLeaf struct {
	loc        []string // instance location
	path       string   // loc as JSONPath
	schemaPath string
	message    string
	mismatch   mismatch
}

// mismatch grades how little of a value matched, to pick the branch of an anyOf/oneOf the caller meant.
type mismatch int

const (
	mismatchNone  mismatch = iota
	mismatchValue          // const or enum: the right kind of value, but not an allowed one
	mismatchType           // type: another kind of value altogether
)

// valueCtx says which value a subtree of errors is about: the instance, or (inside propertyNames) a
// property name standing at location base of the instance.
type valueCtx struct {
	root any
	base []string
}

type flattener struct {
	instance any // the validated instance, to tell array indexes from object keys in paths
	doc      any // the schema document, to quote subschemas; nil when unknown
	leaves   []fieldLeaf
}

// walk flattens e. parentURL, parentKw and parentLoc are the absolute schema location, the keyword
// location (a JSON pointer from the root, through every $ref) and the instance location of e's parent; all
// are empty for the root error.
func (f *flattener) walk(e *sjs.ValidationError, vc valueCtx, parentURL, parentKw string, parentLoc []string) {
	kw, rel, relOK := parentKw, "", parentURL == ""
	if parentURL != "" {
		if rel, relOK = strings.CutPrefix(e.SchemaURL, parentURL); relOK {
			kw += rel
		} else if _, frag, ok := strings.Cut(e.SchemaURL, "#"); ok {
			kw = frag // not under its parent: fall back to the absolute location
		}
	}
	next := e.SchemaURL
	if ref, ok := e.ErrorKind.(*kind.Reference); ok {
		kw += "/" + strings.ReplaceAll(strings.ReplaceAll(ref.Keyword, "~", "~0"), "/", "~1")
		next = ref.URL
	}
	loc := append(slices.Clone(vc.base), e.InstanceLocation...)
	value, _ := valueAt(vc.root, e.InstanceLocation)
	add := func(keyword []string, msg string, m mismatch) {
		sp := append(pointerTokens(kw), keyword...)
		f.leaves = append(f.leaves, fieldLeaf{loc: loc, schemaPath: strings.Join(sp, "."), message: msg, mismatch: m})
	}

	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				f.walk(c, vc, next, kw, loc)
			}
			return
		}
	case *kind.AnyOf:
		f.alternatives(e, vc, next, kw, loc, value, "anyOf")
		return
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			f.alternatives(e, vc, next, kw, loc, value, "oneOf")
			return
		}
		msg := fmt.Sprintf("%s is valid under each of %s", pyRepr(value), f.quoteSchemas(e.SchemaURL, "oneOf", k.Subschemas))
		add([]string{"oneOf"}, msg, mismatchNone)
		return
	case *kind.PropertyNames:
		if len(vc.base) == 0 {
			loc = parentLoc
			if relOK {
				loc = propertyNamesLocation(vc.root, parentLoc, pointerTokens(rel))
			}
		}
		if len(e.Causes) > 0 {
			// The causes are about the name, validated as a value of its own; report them at the object.
			for _, c := range e.Causes {
				f.walk(c, valueCtx{root: k.Property, base: loc}, e.SchemaURL, kw, loc)
			}
			return
		}
		f.leaves = append(f.leaves, fieldLeaf{loc: loc, schemaPath: strings.Join(pointerTokens(kw), "."),
			message: fmt.Sprintf("%s is not a valid property name", pyRepr(k.Property))})
		return
	case *kind.Required:
		for _, m := range k.Missing {
			add([]string{"required"}, fmt.Sprintf("%s is a required property", pyRepr(m)), mismatchNone)
		}
		return
	case *kind.Dependency:
		for _, m := range k.Missing {
			add([]string{"dependencies", k.Prop}, fmt.Sprintf("%s is a dependency of %s", pyRepr(m), pyRepr(k.Prop)), mismatchNone)
		}
		return
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			add([]string{"dependentRequired", k.Prop}, fmt.Sprintf("%s is a dependency of %s", pyRepr(m), pyRepr(k.Prop)), mismatchNone)
		}
		return
	case *kind.Not:
		add([]string{"not"}, fmt.Sprintf("%s should not be valid under %s", pyRepr(value), f.quoteSchema(e.SchemaURL, "not")), mismatchNone)
		return
	}
	if _, ok := e.ErrorKind.(*kind.FalseSchema); ok && len(loc) > 0 {
		// false under these keywords rejects one property or item: report it at its container and name it,
		// as additionalProperties and draft-07's additionalItems are.
		kwTokens, last := pointerTokens(kw), loc[len(loc)-1]
		var msg string
		switch kwTokens[len(kwTokens)-1] {
		case "unevaluatedProperties":
			msg = fmt.Sprintf("Unevaluated properties are not allowed (%s was unexpected)", pyRepr(last))
		case "items", "additionalItems":
			msg = fmt.Sprintf("Additional items are not allowed (%s was unexpected)", pyRepr(value))
		case "unevaluatedItems":
			msg = fmt.Sprintf("Unevaluated items are not allowed (%s was unexpected)", pyRepr(value))
		}
		if msg != "" {
			f.leaves = append(f.leaves, fieldLeaf{loc: loc[:len(loc)-1], schemaPath: strings.Join(kwTokens, "."), message: msg})
			return
		}
	}
	m := mismatchNone
	switch e.ErrorKind.(type) {
	case *kind.Type:
		m = mismatchType
	case *kind.Const, *kind.Enum:
		m = mismatchValue
	}
	add(e.ErrorKind.KeywordPath(), f.message(e.ErrorKind, value, e.SchemaURL), m)
}

// propertyNamesLocation works around santhosh-tekuri/jsonschema v6.0.3 keeping a propertyNames error's
// instance location in a slice that later validation overwrites (upstream issue #258, PR #269). It rebuilds
// the location from the parent error's location, which is reliable, and the schema steps between the two
// (rel): "properties/<name>" and tuple indexes descend, in-place keywords ($ref, allOf/N, then, ...) do
// not. At a step that could be any item or key (items, additionalProperties, ...) it stops and the error
// is reported at that container: coarser than the truth, but never wrong.
func propertyNamesLocation(instance any, parentLoc, rel []string) []string {
	loc := slices.Clone(parentLoc)
	v, ok := valueAt(instance, loc)
	if !ok {
		return loc
	}
	for i := 0; i < len(rel); {
		step, arg := rel[i], ""
		if i+1 < len(rel) {
			arg = rel[i+1]
		}
		switch step {
		case "properties":
			obj, _ := v.(map[string]any)
			child, ok := obj[arg]
			if !ok || i+1 >= len(rel) {
				return loc
			}
			loc, v, i = append(loc, arg), child, i+2
		case "items", "prefixItems":
			arr, _ := v.([]any)
			n, err := strconv.Atoi(arg)
			if err != nil || n < 0 || n >= len(arr) {
				return loc // "items" as one schema for every item, or a missing item
			}
			loc, v, i = append(loc, arg), arr[n], i+2
		case "allOf", "anyOf", "oneOf", "dependencies", "dependentSchemas":
			i += 2
		case "not", "if", "then", "else", "$ref", "$dynamicRef", "$recursiveRef":
			i++
		default: // "propertyNames" itself, or a keyword that could mean any item or key
			return loc
		}
	}
	return loc
}

// alternatives reports a failed anyOf or oneOf (none matched). A branch that failed only on the value's
// type was clearly not meant, nor, when that leaves several, one that failed only on a const or enum for
// the value itself. When exactly one branch is left, its errors are the useful ones (a nullable "uri"
// string given "x" reports the uri error); otherwise one error stands for the whole keyword.
func (f *flattener) alternatives(e *sjs.ValidationError, vc valueCtx, next, kw string, loc []string, value any, keyword string) {
	branches := make([][]fieldLeaf, 0, len(e.Causes))
	for _, c := range e.Causes {
		sub := &flattener{instance: f.instance, doc: f.doc}
		sub.walk(c, vc, next, kw, loc)
		branches = append(branches, sub.leaves)
	}
	for _, worst := range []mismatch{mismatchType, mismatchValue} {
		var kept [][]fieldLeaf
		for _, b := range branches {
			if !onlyMismatches(b, loc, worst) {
				kept = append(kept, b)
			}
		}
		if len(kept) == 1 {
			f.leaves = append(f.leaves, kept[0]...)
			return
		}
		if len(kept) == 0 {
			break
		}
		branches = kept
	}
	sp := append(pointerTokens(kw), keyword)
	f.leaves = append(f.leaves, fieldLeaf{loc: loc, schemaPath: strings.Join(sp, "."),
		message: fmt.Sprintf("%s is not valid under any of the given schemas", pyRepr(value))})
}

// onlyMismatches reports whether every leaf is a mismatch of the value at loc itself, at least as bad as
// worst (type mismatches count as value mismatches too).
func onlyMismatches(leaves []fieldLeaf, loc []string, worst mismatch) bool {
	for _, l := range leaves {
		if l.mismatch < worst || !slices.Equal(l.loc, loc) {
			return false
		}
	}
	return len(leaves) > 0
}

// fieldErrors returns the leaves as Errors: sorted by path (array indexes numerically) then schema
// path, duplicates removed.
func (f *flattener) fieldErrors() []Error {
	if len(f.leaves) == 0 {
		return nil
	}
	for i := range f.leaves {
		f.leaves[i].path = jsonPath(f.instance, f.leaves[i].loc)
	}
	f.sort()
	out := make([]Error, 0, len(f.leaves))
	for _, l := range f.leaves {
		fe := Error{Path: l.path, Message: l.message, SchemaPath: l.schemaPath}
		if len(out) > 0 && out[len(out)-1] == fe {
			continue
		}
		out = append(out, fe)
	}
	return out
}

// locatedMessages renders the leaves of a meta-schema failure: the instance was the schema, so each
// location is a place in the schema.
func (f *flattener) locatedMessages() string {
	f.sort()
	var msgs []string
	for _, l := range f.leaves {
		m := "at " + dotLocation(l.loc) + ": " + l.message
		if len(msgs) == 0 || msgs[len(msgs)-1] != m {
			msgs = append(msgs, m)
		}
	}
	return strings.Join(msgs, "; ")
}

func (f *flattener) sort() {
	slices.SortStableFunc(f.leaves, func(a, b fieldLeaf) int {
		if c := f.compareLocations(a.loc, b.loc); c != 0 {
			return c
		}
		if c := strings.Compare(a.schemaPath, b.schemaPath); c != 0 {
			return c
		}
		return strings.Compare(a.message, b.message)
	})
}

// compareLocations orders instance locations token by token, array indexes numerically.
func (f *flattener) compareLocations(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aErr := strconv.Atoi(a[i])
		bi, bErr := strconv.Atoi(b[i])
		if aErr == nil && bErr == nil {
			if ai < bi {
				return -1
			}
			return 1
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

// quoteSchema renders the subschema at keyword kw of the schema at absolute location loc, as Python would.
func (f *flattener) quoteSchema(loc string, kw ...string) string {
	if f.doc != nil && strings.HasPrefix(loc, schemaURL+"#") {
		if v, ok := valueAt(f.doc, append(fragmentTokens(loc), kw...)); ok {
			return pyRepr(v)
		}
	}
	return "the given schema"
}

func (f *flattener) quoteSchemas(loc, kw string, indexes []int) string {
	var parts []string
	for _, i := range indexes {
		parts = append(parts, f.quoteSchema(loc, kw, strconv.Itoa(i)))
	}
	return strings.Join(parts, ", ")
}

var kindPrinter = message.NewPrinter(language.English)

// message words one fieldLeaf error like Python's jsonschema (docs/decisions.md); kinds without a Python
// counterpart keep the validator's own wording.
func (f *flattener) message(k sjs.ErrorKind, v any, at string) string {
	switch k := k.(type) {
	case *kind.Type:
		// The validator lists types in its own order; the schema's order reads better.
		want := slices.Clone(k.Want)
		if f.doc != nil && strings.HasPrefix(at, schemaURL+"#") {
			if types, ok := valueAt(f.doc, append(fragmentTokens(at), "type")); ok {
				if list, ok := types.([]any); ok && len(list) == len(want) {
					for i, t := range list {
						want[i], _ = t.(string)
					}
				}
			}
		}
		for i, t := range want {
			want[i] = pyRepr(t)
		}
		return fmt.Sprintf("%s is not of type %s", pyRepr(v), strings.Join(want, ", "))
	case *kind.Enum:
		return fmt.Sprintf("%s is not one of %s", pyRepr(v), pyRepr(k.Want))
	case *kind.Const:
		return fmt.Sprintf("%s was expected", pyRepr(k.Want))
	case *kind.Format:
		name, ok := formatNames[k.Want]
		if !ok {
			name = k.Want
		}
		return fmt.Sprintf("%s is not a valid %s", pyRepr(v), name)
	case *kind.AdditionalProperties:
		props := slices.Sorted(slices.Values(k.Properties))
		quoted := make([]string, len(props))
		for i, p := range props {
			quoted[i] = pyRepr(p)
		}
		return fmt.Sprintf("Additional properties are not allowed (%s %s unexpected)", strings.Join(quoted, ", "),
			wasWere(len(props)))
	case *kind.AdditionalItems:
		var extra []string
		if arr, ok := v.([]any); ok && k.Count <= len(arr) {
			for _, e := range arr[len(arr)-k.Count:] {
				extra = append(extra, pyRepr(e))
			}
		}
		return fmt.Sprintf("Additional items are not allowed (%s %s unexpected)", strings.Join(extra, ", "), wasWere(k.Count))
	case *kind.MinLength, *kind.MinItems:
		return fmt.Sprintf("%s is too short", pyRepr(v))
	case *kind.MaxLength, *kind.MaxItems:
		return fmt.Sprintf("%s is too long", pyRepr(v))
	case *kind.MinProperties:
		return fmt.Sprintf("%s does not have enough properties", pyRepr(v))
	case *kind.MaxProperties:
		return fmt.Sprintf("%s has too many properties", pyRepr(v))
	case *kind.Minimum:
		return fmt.Sprintf("%s is less than the minimum of %s", pyRepr(v), ratString(k.Want))
	case *kind.Maximum:
		return fmt.Sprintf("%s is greater than the maximum of %s", pyRepr(v), ratString(k.Want))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s is less than or equal to the minimum of %s", pyRepr(v), ratString(k.Want))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s is greater than or equal to the maximum of %s", pyRepr(v), ratString(k.Want))
	case *kind.MultipleOf:
		return fmt.Sprintf("%s is not a multiple of %s", pyRepr(v), ratString(k.Want))
	case *kind.Pattern:
		return fmt.Sprintf("%s does not match %s", pyRepr(v), pyRepr(k.Want))
	case *kind.UniqueItems:
		return fmt.Sprintf("%s has non-unique elements", pyRepr(v))
	case *kind.Contains:
		return fmt.Sprintf("%s does not contain items matching the given schema", pyRepr(v))
	case *kind.MinContains:
		return fmt.Sprintf("Too few items match the given schema (expected at least %d but only %d matched)", k.Want, len(k.Got))
	case *kind.MaxContains:
		return fmt.Sprintf("Too many items match the given schema (expected at most %d)", k.Want)
	case *kind.FalseSchema:
		return fmt.Sprintf("False schema does not allow %s", pyRepr(v))
	case *kind.RefCycle:
		return "the schema " + refCycleMessage(k)
	}
	return k.LocalizedString(kindPrinter)
}

// formatNames are the nouns of "'x' is not a valid …".
var formatNames = map[string]string{
	"uri":                   "URI",
	"uri-reference":         "URI reference",
	"iri":                   "IRI",
	"iri-reference":         "IRI reference",
	"uri-template":          "URI template",
	"email":                 "email address",
	"idn-email":             "email address",
	"hostname":              "hostname",
	"idn-hostname":          "hostname",
	"ipv4":                  "IPv4 address",
	"ipv6":                  "IPv6 address",
	"date-time":             "date-time",
	"date":                  "date",
	"time":                  "time",
	"duration":              "duration",
	"period":                "period",
	"uuid":                  "UUID",
	"regex":                 "regular expression",
	"json-pointer":          "JSON pointer",
	"relative-json-pointer": "relative JSON pointer",
	"semver":                "semantic version",
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return pyFloat(f)
}

// valueAt follows instance-location tokens into a decoded JSON value.
func valueAt(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch c := v.(type) {
		case map[string]any:
			e, ok := c[t]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// jsonPath renders an instance location as JSONPath: "$", "$.url", "$.items[2]", "$['odd key']". Tokens
// are array indexes only where the instance has an array.
func jsonPath(instance any, tokens []string) string {
	var b strings.Builder
	b.WriteByte('$')
	v, known := instance, true
	for _, t := range tokens {
		if arr, ok := v.([]any); ok && known {
			if i, err := strconv.Atoi(t); err == nil && i >= 0 && i < len(arr) {
				fmt.Fprintf(&b, "[%d]", i)
				v = arr[i]
				continue
			}
		}
		if isShorthandName(t) {
			b.WriteByte('.')
			b.WriteString(t)
		} else {
			b.WriteString("['")
			writePathEscaped(&b, t)
			b.WriteString("']")
		}
		if obj, ok := v.(map[string]any); ok && known {
			v, known = obj[t]
		} else {
			known = false
		}
	}
	return b.String()
}

// isShorthandName reports whether a key can follow a dot in JSONPath (RFC 9535 member-name-shorthand).
func isShorthandName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r >= 0x80 || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// writePathEscaped escapes a key inside '…' as RFC 9535 normalized paths do.
func writePathEscaped(b *strings.Builder, s string) {
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
}

// --- Python-style values in messages -------------------------------------------------------------------

// reprLimit bounds how much of a value a message quotes.
const reprLimit = 120

// pyRepr renders a decoded JSON value as Python's repr would ('text', 2, 2.5, True, None, ['a', 1],
// {'k': 'v'}; object keys sorted), cut to about reprLimit characters.
func pyRepr(v any) string {
	r := reprWriter{limit: reprLimit}
	r.value(v)
	if r.cut {
		return r.b.String() + "..."
	}
	return r.b.String()
}

type reprWriter struct {
	b     strings.Builder
	limit int
	cut   bool
}

func (r *reprWriter) full() bool {
	if r.b.Len() >= r.limit {
		r.cut = true
	}
	return r.cut
}

func (r *reprWriter) value(v any) {
	if r.full() {
		return
	}
	switch v := v.(type) {
	case nil:
		r.b.WriteString("None")
	case bool:
		if v {
			r.b.WriteString("True")
		} else {
			r.b.WriteString("False")
		}
	case string:
		r.str(v)
	case float64:
		r.b.WriteString(pyFloat(v))
	case json.Number:
		r.b.WriteString(clipText(string(v), r.limit))
	case []string:
		items := make([]any, len(v))
		for i, s := range v {
			items[i] = s
		}
		r.value(items)
	case []any:
		r.b.WriteByte('[')
		for i, e := range v {
			if r.full() {
				return
			}
			if i > 0 {
				r.b.WriteString(", ")
			}
			r.value(e)
		}
		r.b.WriteByte(']')
	case map[string]any:
		r.b.WriteByte('{')
		for i, k := range sortedMapKeys(v) {
			if r.full() {
				return
			}
			if i > 0 {
				r.b.WriteString(", ")
			}
			r.str(k)
			r.b.WriteString(": ")
			r.value(v[k])
		}
		r.b.WriteByte('}')
	default:
		fmt.Fprintf(&r.b, "%v", v)
	}
}

// str writes a Python string literal: single quotes unless the text has ' and no ".
func (r *reprWriter) str(s string) {
	q := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	r.b.WriteRune(q)
	for _, c := range s {
		if r.full() {
			return
		}
		switch {
		case c == '\\':
			r.b.WriteString(`\\`)
		case c == q:
			r.b.WriteRune('\\')
			r.b.WriteRune(c)
		case c == '\n':
			r.b.WriteString(`\n`)
		case c == '\r':
			r.b.WriteString(`\r`)
		case c == '\t':
			r.b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&r.b, `\x%02x`, c)
		case !unicode.IsPrint(c) && c != ' ':
			switch {
			case c <= 0xff:
				fmt.Fprintf(&r.b, `\x%02x`, c)
			case c <= 0xffff:
				fmt.Fprintf(&r.b, `\u%04x`, c)
			default:
				fmt.Fprintf(&r.b, `\U%08x`, c)
			}
		default:
			r.b.WriteRune(c)
		}
	}
	r.b.WriteRune(q)
}

// pyFloat writes a JSON number as people expect: integral values without a fraction (JSON does not
// tell 2 from 2.0 once decoded), others as Python's repr does (0.5, 1e-05, 1.5e+300).
func pyFloat(f float64) string {
	a := math.Abs(f)
	switch {
	case f == math.Trunc(f) && a < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	case a >= 1e-4 && a < 1e16:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

func sortedMapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
