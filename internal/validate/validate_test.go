package validate

import (
	"reflect"
	"testing"
)

// TestEveryFailingKeyword: the validator stops checking a subschema at a failed format; the keywords it
// skipped are still reported, each with its own schema path, and only where they fail.
func TestEveryFailingKeyword(t *testing.T) {
	t.Parallel()
	s, err := Compile([]byte(`{"type":"object","format":"uri","properties":{
		"url":{"type":"string","format":"uri","pattern":"^https?://","minLength":12},
		"mail":{"type":"string","format":"email","maxLength":5},
		"list":{"type":"array","items":{"type":"string","format":"date","pattern":"^2"}},
		"ok":{"type":"string","format":"uri","pattern":"^x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want []Error
	}{
		{`{"url":"not-a-url"}`, []Error{
			{"$.url", "'not-a-url' is not a valid URI", "properties.url.format"},
			{"$.url", "'not-a-url' is too short", "properties.url.minLength"},
			{"$.url", "'not-a-url' does not match '^https?://'", "properties.url.pattern"},
		}},
		// The pattern matches: only the format fails.
		{`{"url":"http://exa mple.com"}`, []Error{{"$.url", "'http://exa mple.com' is not a valid URI", "properties.url.format"}}},
		// Format holds: the other keywords were checked anyway.
		{`{"url":"https://a"}`, []Error{{"$.url", "'https://a' is too short", "properties.url.minLength"}}},
		{`{"mail":"nobody","list":["1999-13-01","2001-01-01","x"]}`, []Error{
			{"$.list[0]", "'1999-13-01' is not a valid date", "properties.list.items.format"},
			{"$.list[0]", "'1999-13-01' does not match '^2'", "properties.list.items.pattern"},
			{"$.list[2]", "'x' is not a valid date", "properties.list.items.format"},
			{"$.list[2]", "'x' does not match '^2'", "properties.list.items.pattern"},
			{"$.mail", "'nobody' is not a valid email address", "properties.mail.format"},
			{"$.mail", "'nobody' is too long", "properties.mail.maxLength"},
		}},
		{`{"ok":"x://y"}`, nil},
	}
	for _, tt := range tests {
		got := validateJSON(t, s, tt.in)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Validate(%s):\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func validateJSON(t *testing.T, s *Schema, in string) []Error {
	t.Helper()
	v, err := decodeParams([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}
