package orchestrator

// Limits bound what callers and executors may send. Exceeding one is an [ErrTooLarge] or [ErrInvalid] error.
type Limits struct {
	// MaxParametersBytes bounds a run's parameters (and metadata) as JSON. Default 1 MiB.
	MaxParametersBytes int
	// MaxSchemaBytes bounds a parameters or output schema. Default 256 KiB.
	MaxSchemaBytes int
	// MaxEventBytes bounds one event's payload. Default 256 KiB.
	MaxEventBytes int
	// MaxEventsPerAppend bounds how many events one AppendEvents call may carry. Default 1000.
	MaxEventsPerAppend int
	// MaxEventsPage bounds a page of events. Default 1000.
	MaxEventsPage int
	// MaxBlueprints bounds how many blueprints one runner may announce. Default 1000.
	MaxBlueprints int
	// MaxResultBytes bounds a result's text plus data. Default 8 MiB. Runners are told it when they
	// register ([Registration].MaxResultBytes) and cut their results to fit it, measured as JSON; the HTTP
	// API sizes its report routes' body limit after it.
	MaxResultBytes int
}

// DefaultLimits are the limits used for zero fields of [Limits].
var DefaultLimits = Limits{
	MaxParametersBytes: 1 << 20,
	MaxSchemaBytes:     256 << 10,
	MaxEventBytes:      256 << 10,
	MaxEventsPerAppend: 1000,
	MaxEventsPage:      1000,
	MaxBlueprints:      1000,
	MaxResultBytes:     8 << 20,
}
