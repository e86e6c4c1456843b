// Package ids makes the ids of records: a prefix that says what the record is ("ses_", "run_", …)
// followed by a lowercase ULID, unique and sortable by creation time.
package ids

import (
	"strings"

	"github.com/oklog/ulid/v2"
)

// New returns prefix followed by a fresh lowercase ULID.
func New(prefix string) string {
	return prefix + strings.ToLower(ulid.Make().String())
}
