package cli

import (
	"encoding/json"
	"errors"
	"testing"
)

// paramSchema exercises every way buildParams types a value.
const paramSchema = `{
	"type": "object",
	"definitions": {"level": {"type": "integer", "minimum": 0}},
	"properties": {
		"url": {"type": "string"},
		"depth": {"type": "integer"},
		"ratio": {"type": "number"},
		"verbose": {"type": "boolean"},
		"tags": {"type": "array", "items": {"type": "string"}},
		"ports": {"type": "array", "items": {"type": "integer"}},
		"pair": {"type": "array", "items": [{"type": "integer"}, {"type": "boolean"}]},
		"labels": {"type": "object"},
		"limit": {"type": ["integer", "null"]},
		"level": {"$ref": "#/definitions/level"},
		"mode": {"enum": ["fast", 3, true]},
		"either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
		"free": {"description": "no type"},
		"id": {"type": "string"}
	}
}`

func TestBuildParams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		schema string
		base   string
		pairs  []string
		want   string
	}{
		{"strings stay strings", paramSchema, "", []string{"url=https://example.com/?a=b", "id=007"}, `{"url":"https://example.com/?a=b","id":"007"}`},
		{"integer", paramSchema, "", []string{"depth=2"}, `{"depth":2}`},
		{"large integer stays exact", paramSchema, "", []string{"depth=123456789012345678901234567890"}, `{"depth":123456789012345678901234567890}`},
		{"negative integer", paramSchema, "", []string{"depth=-3"}, `{"depth":-3}`},
		{"not an integer stays a string", paramSchema, "", []string{"depth=deep", "ratio=1.5.2"}, `{"depth":"deep","ratio":"1.5.2"}`},
		{"number", paramSchema, "", []string{"ratio=0.25", "level=4"}, `{"ratio":0.25,"level":4}`},
		{"number with exponent", paramSchema, "", []string{"ratio=1e-3"}, `{"ratio":1e-3}`},
		{"booleans", paramSchema, "", []string{"verbose=true"}, `{"verbose":true}`},
		{"boolean spellings", paramSchema, "", []string{"verbose=no"}, `{"verbose":false}`},
		{"not a boolean stays a string", paramSchema, "", []string{"verbose=maybe"}, `{"verbose":"maybe"}`},
		{"array of strings from a comma list", paramSchema, "", []string{"tags=a, b ,c"}, `{"tags":["a","b","c"]}`},
		{"array items typed from the item schema", paramSchema, "", []string{"ports=80,443"}, `{"ports":[80,443]}`},
		{"array item that does not fit stays a string", paramSchema, "", []string{"ports=80,http"}, `{"ports":[80,"http"]}`},
		{"tuple items typed by position", paramSchema, "", []string{"pair=1,yes"}, `{"pair":[1,true]}`},
		{"array as JSON", paramSchema, "", []string{`tags=["a,b","c"]`}, `{"tags":["a,b","c"]}`},
		{"empty array", paramSchema, "", []string{"tags="}, `{"tags":[]}`},
		{"repeated array appends", paramSchema, "", []string{"ports=1,2", "ports=3"}, `{"ports":[1,2,3]}`},
		{"object as JSON", paramSchema, "", []string{`labels={"b":1,"a":[true]}`}, `{"labels":{"b":1,"a":[true]}}`},
		{"object that is not JSON stays a string", paramSchema, "", []string{"labels=a=b"}, `{"labels":"a=b"}`},
		{"nullable integer", paramSchema, "", []string{"limit=null"}, `{"limit":null}`},
		{"nullable integer with a value", paramSchema, "", []string{"limit=7"}, `{"limit":7}`},
		{"enum values typed from the enum", paramSchema, "", []string{"mode=3"}, `{"mode":3}`},
		{"enum string", paramSchema, "", []string{"mode=fast"}, `{"mode":"fast"}`},
		{"anyOf: the first type that fits", paramSchema, "", []string{"either=12"}, `{"either":12}`},
		{"anyOf: falls through to string", paramSchema, "", []string{"either=x"}, `{"either":"x"}`},
		{"untyped property is a string", paramSchema, "", []string{"free=1"}, `{"free":"1"}`},
		{"unknown key is a string", paramSchema, "", []string{"bogus=1"}, `{"bogus":"1"}`},
		{"value with =", paramSchema, "", []string{"url=a=b"}, `{"url":"a=b"}`},
		{"no schema: strings", "", "", []string{"n=1", "b=true"}, `{"n":"1","b":"true"}`},
		{"additionalProperties schema types unknown keys", `{"type":"object","additionalProperties":{"type":"integer"}}`, "", []string{"n=1"}, `{"n":1}`},
		{"--params with -p on top", paramSchema, `{"url":"x","depth":1}`, []string{"depth=5"}, `{"url":"x","depth":5}`},
		{"--params alone", paramSchema, `{"depth": 1.0}`, nil, `{"depth":1.0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := buildParams(json.RawMessage(tc.schema), []byte(tc.base), tc.pairs)
			if err != nil {
				t.Fatalf("buildParams(%s, %v): %v", tc.base, tc.pairs, err)
			}
			if string(got) != tc.want {
				t.Errorf("buildParams(%s, %v)\n got %s\nwant %s", tc.base, tc.pairs, got, tc.want)
			}
		})
	}
}

func TestBuildParamsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		base  string
		pairs []string
	}{
		{"no =", "", []string{"depth"}},
		{"empty key", "", []string{"=1"}},
		{"scalar twice", "", []string{"depth=1", "depth=2"}},
		{"--params not JSON", "{", nil},
		{"--params not an object", "[1]", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := buildParams(json.RawMessage(paramSchema), []byte(tc.base), tc.pairs)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("buildParams(%q, %v) = %s, %v; want a usage error", tc.base, tc.pairs, got, err)
			}
			if exitCode(err) != ExitUsage {
				t.Errorf("exit code %d, want %d", exitCode(err), ExitUsage)
			}
		})
	}
	if got, err := buildParams(nil, nil, nil); got != nil || err != nil {
		t.Errorf("buildParams with nothing = %s, %v; want nil (no parameters sent)", got, err)
	}
}
