package store

import "time"

// CacheEntry is the result cache's record of one key ([orchestrator.CacheKey]): the completed session
// whose result answers identical starts, until ExpiresAt, and the session executing to fill it now, whose
// result the identical starts that arrive meanwhile wait for.
type CacheEntry struct {
	Key       string
	AgentName string
	// SessionID is the completed session whose result is cached; empty when none is.
	SessionID string
	// CompletedAt is when SessionID completed; ExpiresAt when its result stops answering (CompletedAt plus
	// the agent's TTL then). Both are zero when no result is cached.
	CompletedAt time.Time
	ExpiresAt   time.Time
	// LeaderSessionID is the session executing for the key, whose result the runs waiting on the key
	// (CacheRole "wait") share when it completes; empty when none is.
	LeaderSessionID string
	UpdatedAt       time.Time
}
