package ids

import (
	"testing"
	"time"
)

func TestTime(t *testing.T) {
	t.Parallel()
	before := time.Now().Truncate(time.Millisecond)
	got, ok := Time(New("run_"))
	if !ok || got.Before(before) || got.After(time.Now()) {
		t.Errorf("Time(New) = %v, %v; want a time from %v to now", got, ok, before)
	}
	for _, id := range []string{"", "run_", "run_nope", "not an id"} {
		if _, ok := Time(id); ok {
			t.Errorf("Time(%q) is ok; want false", id)
		}
	}
}
