// Package tags holds the rule for tags, which blueprints, runners and run demands carry.
package tags

import (
	"fmt"
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
