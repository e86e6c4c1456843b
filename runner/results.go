package runner

import (
	"bytes"
	"fmt"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
)

// A run's result reaches the coordinator as JSON, where it may take up to six times its size: a control
// character is written \u00XX, and so are <, > and &. The coordinator announces at registration the largest
// result it accepts, as JSON ([orchestrator.Registration].MaxResultBytes); the runner cuts a larger result to
// fit before it reports it, so that a run with much output still ends, with what fits of it, rather than
// being refused.

// maxReportError bounds a report's error message; the coordinator keeps no more.
const maxReportError = 64 << 10

// resultLimit is the largest result, as JSON, this runner reports: the coordinator's announced limit, or
// Config.MaxResultBytes when that is smaller.
func (r *Runner) resultLimit() int64 {
	r.mu.Lock()
	limit := r.maxResult
	r.mu.Unlock()
	if limit <= 0 {
		limit = int64(orchestrator.Limits{}.WithDefaults().MaxResultBytes)
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
func fitResult(res *orchestrator.Result, limit int64) (*orchestrator.Result, map[string]any) {
	if res == nil || limit <= 0 {
		return res, nil
	}
	// Most results are far below the limit even if every byte were escaped: no need to encode them.
	if len(res.ValidationErrors) == 0 && 6*int64(len(res.ResultType)+len(res.ResultText)+len(res.ResultData)+len(res.Error))+256 <= limit {
		return res, nil
	}
	size := jsonsize.Of(res)
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
		if n := jsonsize.Of(&alone); n <= limit {
			info["kept_bytes"], info["kept_text_bytes"] = n, 0
			info["message"] = fmt.Sprintf("the result is %d bytes as JSON, over the coordinator's limit of %d: result_text, the same document as result_data, was left out", size, limit)
			return &alone, info
		}
	}
	out.ResultData = nil
	info["result_data_dropped"] = len(res.ResultData) > 0
	text := out.ResultText
	out.ResultText = ""
	if jsonsize.Of(&out) > limit {
		out.ValidationErrors = nil
	}
	if over := jsonsize.Of(&out) - limit; over > 0 {
		// The error's encoded content: its field's size less the field's key, quotes and comma.
		content := jsonsize.Of(&orchestrator.Result{Error: out.Error}) - (jsonsize.Of(&orchestrator.Result{Error: "x"}) - 1)
		out.Error = jsonsize.CutString(out.Error, content-over)
	}
	out.ResultText = jsonsize.CutString(text, limit-jsonsize.Of(&out))
	n := jsonsize.Of(&out)
	for n > limit && out.ResultText != "" { // the estimate was off: never report more than the limit
		out.ResultText = out.ResultText[:len(out.ResultText)/2]
		n = jsonsize.Of(&out)
	}
	info["kept_bytes"], info["kept_text_bytes"] = n, len(out.ResultText)
	info["message"] = fmt.Sprintf("the result is %d bytes as JSON, over the coordinator's limit of %d: cut to %d bytes of result_text", size, limit, len(out.ResultText))
	if info["result_data_dropped"] == true {
		info["message"] = info["message"].(string) + ", result_data left out"
	}
	return &out, info
}
