package schemacache

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

// crawlerSchema is the web-crawler parameters schema of the validation example in docs/http-api.md.
const crawlerSchema = `{"type":"object","required":["url"],"properties":{"url":{"type":"string","format":"uri"},"depth":{"type":"integer","default":2}}}`

func TestCache(t *testing.T) {
	t.Parallel()
	c := New(4)
	schemas := make([]json.RawMessage, 10)
	for i := range schemas {
		schemas[i] = json.RawMessage(fmt.Sprintf(`{"properties":{"n":{"type":"integer","maximum":%d},"d":{"default":1}}}`, i))
	}
	bad := json.RawMessage(`{"type":"strang"}`)

	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				raw := schemas[(g+i)%len(schemas)]
				s, err := c.Compile(raw)
				if err != nil {
					t.Errorf("Compile(%s): %v", raw, err)
					return
				}
				if string(s.Raw()) != string(raw) {
					t.Errorf("Compile(%s) returned the schema for %s", raw, s.Raw())
					return
				}
				if _, errs, _ := s.Normalize(json.RawMessage(`{"n":100}`)); len(errs) != 1 {
					t.Errorf("schema %s, params {\"n\":100}: got %+v, want one error", raw, errs)
					return
				}
				if out, errs, err := s.Normalize(json.RawMessage(`{"n":0}`)); string(out) != `{"d":1,"n":0}` {
					t.Errorf("schema %s, params {\"n\":0}: got %s, %+v, %v; want {\"d\":1,\"n\":0}", raw, out, errs, err)
					return
				}
				if _, err := c.Compile(bad); orchestrator.ErrorCode(err) != "invalid_schema" {
					t.Errorf("Compile(%s) = %v, want invalid_schema", bad, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := c.Len(); n > 4 {
		t.Errorf("cache of size 4 holds %d schemas", n)
	}

	// A hit returns the same compiled schema.
	a, _ := c.Compile(schemas[0])
	b, _ := c.Compile(schemas[0])
	if a != b {
		t.Errorf("two Compile calls for the same schema in a row returned different *Schema")
	}
	// A cached error is handed out as a copy that callers may decorate.
	_, e1 := c.Compile(bad)
	var ce *orchestrator.Error
	if !errors.As(e1, &ce) {
		t.Fatalf("Compile(%s) error %T, want *Error", bad, e1)
	}
	ce.With("agent_name", "x")
	if _, e2 := c.Compile(bad); !errors.As(e2, &ce) || ce.Details != nil {
		t.Errorf("a decorated cached error leaked into the next call: %v", e2)
	}
	if New(0).size != defaultSize {
		t.Errorf("New(0) size = %d, want %d", New(0).size, defaultSize)
	}
}

func BenchmarkCacheHit(b *testing.B) {
	c := New(16)
	raw := json.RawMessage(crawlerSchema)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Compile(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestCompileOutput(t *testing.T) {
	t.Parallel()
	c := New(0)
	for _, none := range []string{"", "  ", "null", " null\n"} {
		if hasSchema(json.RawMessage(none)) {
			t.Errorf("hasSchema(%q) = true", none)
		}
		if s, err := c.CompileOutput(json.RawMessage(none)); s != nil || err != nil {
			t.Errorf("CompileOutput(%q) = %v, %v; want no schema", none, s, err)
		}
	}
	if s, err := c.CompileOutput(json.RawMessage(`{"type":"object"}`)); s == nil || err != nil {
		t.Errorf("CompileOutput of an object schema = %v, %v", s, err)
	}
	_, err := c.CompileOutput(json.RawMessage(`{"type":"strang"}`))
	if !errors.Is(err, orchestrator.ErrInvalid) || orchestrator.ErrorCode(err) != "invalid_schema" || !strings.HasPrefix(err.Error(), "output_schema: ") {
		t.Errorf("CompileOutput of a bad schema = %v, want invalid_schema naming output_schema", err)
	}
}

// An over-limit output schema is refused with its code and details, the message naming output_schema, from
// the first compile and from the cache alike.
func TestCompileOutputKeepsTheLimitError(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100)
	c := New(0)
	for i := range 2 { // the second answer comes from the cache
		_, err := c.CompileOutput(json.RawMessage(deep))
		var e *orchestrator.Error
		if !errors.As(err, &e) || e.Code != "schema_too_complex" || !strings.HasPrefix(e.Message, "output_schema: ") ||
			e.Details["measure"] != "depth" {
			t.Fatalf("CompileOutput #%d = %v, want schema_too_complex naming output_schema with its details", i, err)
		}
		e.Details["measure"] = "changed by a caller" // must not reach the next caller
	}
}
