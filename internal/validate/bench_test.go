//go:build unix

package validate

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// benchSchemas are schemas of the shapes real ones have, from a tool's parameters to a large API
// document, to compare what compiling costs (the limits' measuring included) across changes.
func benchSchemas() map[string]string {
	var union, wide strings.Builder
	union.WriteString(`{"definitions":{"base":{"type":"object","required":["kind"],"properties":{"kind":{"type":"string"},"id":{"type":"string"}}}},"oneOf":[`)
	for i := range 100 {
		if i > 0 {
			union.WriteString(",")
		}
		fmt.Fprintf(&union, `{"allOf":[{"$ref":"#/definitions/base"},{"properties":{"kind":{"const":"k%d"},"v%d":{"type":"integer","description":"The value of variant %d."}}}]}`, i, i, i)
	}
	union.WriteString(`]}`)
	wide.WriteString(`{"type":"object","properties":{`)
	for i := range 2000 {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"field_%d":{"type":"string","maxLength":100,"description":"Field number %d of the record."}`, i, i)
	}
	wide.WriteString(`}}`)
	return map[string]string{
		"tool": `{"type":"object","required":["url"],"properties":{"url":{"type":"string","format":"uri"},
			"depth":{"type":"integer","minimum":1,"maximum":5,"default":2},"tags":{"type":"array","items":{"type":"string"}}}}`,
		"filter": `{"definitions":{"f":{"anyOf":[
			{"type":"object","properties":{"and":{"type":"array","items":{"$ref":"#/definitions/f"}}},"required":["and"]},
			{"type":"object","properties":{"or":{"type":"array","items":{"$ref":"#/definitions/f"}}},"required":["or"]},
			{"type":"object","properties":{"not":{"$ref":"#/definitions/f"}}},
			{"type":"object","properties":{"field":{"type":"string"},"eq":{}}}]}},"$ref":"#/definitions/f"}`,
		"nested20": strings.Repeat(`{"type":"object","description":"One level of a nested configuration.","required":["name"],"properties":{"name":{"type":"string"},"child":`, 20) +
			`{"type":"string"}` + strings.Repeat(`}}`, 20),
		"union100": union.String(),
		"wide2000": wide.String(),
	}
}

func BenchmarkCompile(b *testing.B) {
	schemas := benchSchemas()
	for _, name := range []string{"tool", "filter", "nested20", "union100", "wide2000"} {
		raw := []byte(schemas[name])
		b.Run(fmt.Sprintf("%s-%dB", name, len(raw)), func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, err := Compile(raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the CPU time the process has used, in nanoseconds: on a shared machine it varies less than
// the wall-clock time between runs (the garbage collector's work is in it).
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
