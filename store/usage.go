package store

import (
	"encoding/json"
	"fmt"

	"github.com/agentorchestrator/orchestrator"
)

// UsageOfEvents adds up the deltas of the usage events ([orchestrator.EventUsage]) among events: what
// appending them adds to their session's usage totals. Other events count nothing. ok is false when there
// is no usage event. A usage event whose data does not decode as an [orchestrator.Usage] is an error (the
// coordinator validates usage events before it appends them, so a store meets one only from a caller that
// skipped that).
func UsageOfEvents(events []*orchestrator.Event) (sum orchestrator.Usage, ok bool, err error) {
	for _, e := range events {
		if e == nil || e.Type != orchestrator.EventUsage {
			continue
		}
		var d orchestrator.Usage
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return orchestrator.Usage{}, false, fmt.Errorf("usage event: %w", err)
		}
		sum.Add(d)
		ok = true
	}
	return sum, ok, nil
}
