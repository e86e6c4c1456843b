// Package ids makes the ids of records: a prefix that says what the record is ("ses_", "run_", …)
// followed by a lowercase ULID, unique and sortable by creation time.
package ids

import (
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// The prefixes of the records' ids, and of runner secrets.
const (
	Session  = "ses_"
	Run      = "run_"
	Runner   = "lnch_"
	Callback = "cb_"
	Schedule = "sch_"
	// InputRequest prefixes the ids of input requests (approvals, agents' questions).
	InputRequest = "inp_"
	// RunnerSecret starts every runner secret, so that a secret that leaks into a log or a repository
	// can be recognised (and found by secret scanners).
	RunnerSecret = "aors_"
)

// New returns prefix followed by a fresh lowercase ULID.
func New(prefix string) string {
	return prefix + strings.ToLower(ulid.Make().String())
}

// Time returns when the id was made (to the millisecond, by the wall clock of the process that made it),
// and false when id is not prefix + ULID.
func Time(id string) (time.Time, bool) {
	i := strings.IndexByte(id, '_')
	u, err := ulid.ParseStrict(strings.ToUpper(id[i+1:]))
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()), true
}
