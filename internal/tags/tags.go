// Package tags holds the rule for tags, which blueprints, runners and run demands carry.
package tags

import (
	"fmt"
	"slices"
	"strings"
)

// Validate checks one tag: 1-64 characters, no commas (lists of tags travel comma-separated in URLs) and
// no blanks.
func Validate(tag string) error {
	if tag == "" || len(tag) > 64 || strings.ContainsAny(tag, ", \t\r\n") {
		return fmt.Errorf("tag %q must be 1-64 characters without commas or spaces", tag)
	}
	return nil
}

// Split reads a comma-separated list, as flags and headers carry tags (and host lists): items trimmed,
// empty ones and repeats dropped, in order. An empty string is no items.
func Split(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" && !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	return out
}
