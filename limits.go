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

// WithDefaults returns l with each zero (or negative) field set to its default, the one its doc comment
// names. Limits{}.WithDefaults() is the defaults themselves.
func (l Limits) WithDefaults() Limits {
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxParametersBytes, 1<<20)
	set(&l.MaxSchemaBytes, 256<<10)
	set(&l.MaxEventBytes, 256<<10)
	set(&l.MaxEventsPerAppend, 1000)
	set(&l.MaxEventsPage, 1000)
	set(&l.MaxBlueprints, 1000)
	set(&l.MaxResultBytes, 8<<20)
	return l
}
