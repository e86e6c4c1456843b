// Package schemacache memoizes compiled JSON Schemas, for the coordinator (agents' parameters schemas)
// and the executors (invocations' output schemas).
package schemacache

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"sync"

	"github.com/agentorchestrator/orchestrator"
)

// Cache memoizes compiled schemas by their raw bytes, so the coordinator compiles an agent's schema
// once rather than at every run, and an executor an invocation's output schema once per schema. It holds at most size schemas (and compile errors); when full, an
// arbitrary entry makes room. Concurrent requests for the same uncached schema compile it once. It is safe
// for concurrent use.
type Cache struct {
	mu      sync.RWMutex
	size    int
	entries map[string]*entry
}

type entry struct {
	ready  chan struct{} // closed once s and err are set
	schema *orchestrator.Schema
	err    error
}

// defaultSize is the size of a Cache made with a size of zero or less.
const defaultSize = 1024

// New returns a cache of up to size compiled schemas (1024 if size <= 0).
func New(size int) *Cache {
	if size <= 0 {
		size = defaultSize
	}
	return &Cache{size: size, entries: make(map[string]*entry)}
}

// Compile returns the compiled schema for raw, as [orchestrator.CompileSchema] would, compiling it only when it is not
// cached.
func (c *Cache) Compile(raw json.RawMessage) (*orchestrator.Schema, error) {
	c.mu.RLock()
	e, ok := c.entries[string(raw)]
	c.mu.RUnlock()
	if !ok {
		c.mu.Lock()
		if e, ok = c.entries[string(raw)]; !ok {
			if len(c.entries) >= c.size {
				for k := range c.entries {
					delete(c.entries, k)
					break
				}
			}
			e = &entry{ready: make(chan struct{})}
			c.entries[string(raw)] = e
		}
		c.mu.Unlock()
		if !ok {
			func() {
				defer close(e.ready)
				e.schema, e.err = orchestrator.CompileSchema(raw)
			}()
		}
	}
	<-e.ready
	if e.err != nil {
		// Callers may decorate an *Error (With); each gets its own copy of the cached one.
		var ce *orchestrator.Error
		if errors.As(e.err, &ce) {
			cp := *ce
			cp.Details = maps.Clone(ce.Details)
			return nil, &cp
		}
		return nil, e.err
	}
	return e.schema, nil
}

// hasSchema reports whether raw declares a schema: it is neither empty nor JSON null.
func hasSchema(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) > 0 && string(s) != "null"
}

// CompileOutput compiles an invocation's output schema for an executor: nil when the invocation declares
// none (empty or JSON null), an ErrInvalid "invalid_schema" (or "schema_too_complex") error when it does
// not compile. The error keeps the compile error's code and details, its message prefixed with
// "output_schema: ".
func (c *Cache) CompileOutput(raw json.RawMessage) (*orchestrator.Schema, error) {
	if !hasSchema(raw) {
		return nil, nil
	}
	s, err := c.Compile(raw)
	if err != nil {
		var ce *orchestrator.Error
		if errors.As(err, &ce) {
			cp := *ce
			cp.Message = "output_schema: " + ce.Message
			cp.Details = maps.Clone(ce.Details)
			return nil, &cp
		}
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_schema", "output_schema: %v", err)
	}
	return s, nil
}

// Len reports how many schemas the cache holds.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
