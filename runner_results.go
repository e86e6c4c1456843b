package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// A run's result reaches the coordinator as JSON, where it may take up to six times its size: a control
// character is written \u00XX, and so are <, > and &. The coordinator announces at registration the largest
// result it accepts, as JSON ([Registration].MaxResultBytes); the runner cuts a larger result to fit
// before it reports it, so that a run with much output still ends, with what fits of it, rather than
// being refused.

// maxReportError bounds a report's error message; the coordinator keeps no more.
const maxReportError = 64 << 10

// resultLimit is the largest result, as JSON, this runner reports: the coordinator's announced limit, or
// RunnerConfig.MaxResultBytes when that is smaller.
func (r *Runner) resultLimit() int64 {
	r.mu.Lock()
	limit := r.maxResult
	r.mu.Unlock()
	if limit <= 0 {
		limit = int64(DefaultLimits.MaxResultBytes)
	}
	if c := r.cfg.MaxResultBytes; c > 0 && c < limit {
		limit = c
	}
	return limit
}

// fitResult returns res, or when its JSON encoding exceeds limit, a copy cut to fit and the payload of the
// output_truncated event that says what was cut. When the text and the data hold the same document (a
// command's stdout parsed as JSON), the data alone is kept if it fits, since callers use it; otherwise the
// data goes (a prefix of a JSON document is not the document) and the text is cut — and, should they alone
// not fit, the validation errors go and the error message is cut too.
func fitResult(res *Result, limit int64) (*Result, map[string]any) {
	if res == nil || limit <= 0 {
		return res, nil
	}
	// Most results are far below the limit even if every byte were escaped: no need to encode them.
	if len(res.ValidationErrors) == 0 && 6*int64(len(res.ResultType)+len(res.ResultText)+len(res.ResultData)+len(res.Error))+256 <= limit {
		return res, nil
	}
	size := encodedLen(res)
	if size <= limit {
		return res, nil
	}
	out := *res
	out.Truncated = true
	info := map[string]any{
		"by": "runner", "limit_bytes": limit, "result_bytes": size, "result_text_bytes": len(res.ResultText),
		"result_data_dropped": false,
	}
	if len(res.ResultData) > 0 && res.ResultText != "" && bytes.Equal(bytes.TrimSpace([]byte(res.ResultText)), bytes.TrimSpace(res.ResultData)) {
		alone := out
		alone.ResultText = ""
		if n := encodedLen(&alone); n <= limit {
			info["kept_bytes"], info["kept_text_bytes"] = n, 0
			info["message"] = fmt.Sprintf("the result is %d bytes as JSON, over the coordinator's limit of %d: result_text, the same document as result_data, was left out", size, limit)
			return &alone, info
		}
	}
	out.ResultData = nil
	info["result_data_dropped"] = len(res.ResultData) > 0
	text := out.ResultText
	out.ResultText = ""
	if encodedLen(&out) > limit {
		out.ValidationErrors = nil
	}
	if over := encodedLen(&out) - limit; over > 0 {
		// The error's encoded content: its field's size less the field's key, quotes and comma.
		content := encodedLen(&Result{Error: out.Error}) - (encodedLen(&Result{Error: "x"}) - 1)
		out.Error = cutEncoded(out.Error, content-over)
	}
	out.ResultText = cutEncoded(text, limit-encodedLen(&out))
	n := encodedLen(&out)
	for n > limit && out.ResultText != "" { // the estimate was off: never report more than the limit
		out.ResultText = out.ResultText[:len(out.ResultText)/2]
		n = encodedLen(&out)
	}
	info["kept_bytes"], info["kept_text_bytes"] = n, len(out.ResultText)
	info["message"] = fmt.Sprintf("the result is %d bytes as JSON, over the coordinator's limit of %d: cut to %d bytes of result_text", size, limit, len(out.ResultText))
	if info["result_data_dropped"] == true {
		info["message"] = info["message"].(string) + ", result_data left out"
	}
	return &out, info
}

// encodedLen is the size of v as the HTTP client sends it (json.Marshal, HTML characters escaped).
func encodedLen(v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// asciiEscaped is how many bytes each ASCII character takes inside a JSON string, as encoding/json writes
// it.
var asciiEscaped = func() (t [utf8.RuneSelf]int64) {
	for c := range t {
		b, _ := json.Marshal(string(rune(c)))
		t[c] = int64(len(b) - 2)
	}
	return t
}()

// cutEncoded returns the longest prefix of s, whole characters only, whose JSON string encoding (without
// the quotes) takes at most budget bytes.
func cutEncoded(s string, budget int64) string {
	var n int64
	for i := 0; i < len(s); {
		c := s[i]
		var w, size int64
		switch {
		case c < utf8.RuneSelf:
			w, size = asciiEscaped[c], 1
		default:
			r, sz := utf8.DecodeRuneInString(s[i:])
			size = int64(sz)
			switch {
			case r == utf8.RuneError && sz == 1, r == '\u2028', r == '\u2029':
				w = 6 // \ufffd for a byte that is not UTF-8; \u2028 and \u2029 escaped
			default:
				w = size
			}
		}
		if n+w > budget {
			return s[:i]
		}
		n += w
		i += int(size)
	}
	return s
}
