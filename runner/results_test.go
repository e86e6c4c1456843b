package runner

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
)

func TestFitResult(t *testing.T) {
	t.Parallel()
	zero := 0
	doc := `{"items":["` + strings.Repeat("a", 3000) + `"]}`
	for _, tc := range []struct {
		name      string
		res       *orchestrator.Result
		limit     int64
		untouched bool
		keepData  bool // the data survives (and the text goes)
	}{
		{name: "fits", res: &orchestrator.Result{ResultType: "deterministic", ResultText: "hello", ExitCode: &zero}, limit: 1000, untouched: true},
		{name: "nil", res: nil, limit: 10, untouched: true},
		{name: "plain text", res: &orchestrator.Result{ResultType: "deterministic", ResultText: strings.Repeat("x", 5000)}, limit: 1000},
		{name: "control characters", res: &orchestrator.Result{ResultText: strings.Repeat("\x01", 1000)}, limit: 1000},
		{name: "html and quotes", res: &orchestrator.Result{ResultText: strings.Repeat(`<&>"\`, 500)}, limit: 1000},
		{name: "multibyte", res: &orchestrator.Result{ResultText: strings.Repeat("é€😀\u2028", 500)}, limit: 1001},
		{name: "invalid utf-8", res: &orchestrator.Result{ResultText: strings.Repeat("a\xff", 2000)}, limit: 1000},
		{name: "same document", res: &orchestrator.Result{ResultText: doc + "\n", ResultData: json.RawMessage(doc)}, limit: 4000, keepData: true},
		{name: "same document, too large alone", res: &orchestrator.Result{ResultText: doc + "\n", ResultData: json.RawMessage(doc)}, limit: 2000},
		{name: "different data", res: &orchestrator.Result{ResultText: doc, ResultData: json.RawMessage(`{"n":1}`)}, limit: 1000},
		{name: "huge error", res: &orchestrator.Result{ResultText: "out", Error: strings.Repeat("\x02", 5000), ValidationErrors: []orchestrator.FieldError{{Path: "$", Message: "m"}}}, limit: 500},
	} {
		got, info := fitResult(tc.res, tc.limit)
		if tc.untouched {
			if got != tc.res || info != nil {
				t.Errorf("%s: fitResult changed a result that fits: %+v, %v", tc.name, got, info)
			}
			continue
		}
		if n := jsonsize.Of(got); n > tc.limit {
			t.Errorf("%s: fitted result is %d bytes as JSON, over the limit %d", tc.name, n, tc.limit)
		}
		if !got.Truncated || info == nil || info["kept_bytes"].(int64) != jsonsize.Of(got) || info["result_bytes"].(int64) != jsonsize.Of(tc.res) {
			t.Errorf("%s: Truncated %v, info %v; want it said, with the sizes", tc.name, got.Truncated, info)
		}
		if tc.keepData {
			if string(got.ResultData) != string(tc.res.ResultData) || got.ResultText != "" {
				t.Errorf("%s: want the data kept whole and the text left out, got text %d bytes, data %d", tc.name, len(got.ResultText), len(got.ResultData))
			}
			continue
		}
		if len(got.ResultData) != 0 || info["result_data_dropped"] != (len(tc.res.ResultData) > 0) {
			t.Errorf("%s: data %s, result_data_dropped %v; want the data dropped", tc.name, got.ResultData, info["result_data_dropped"])
		}
		if !strings.HasPrefix(tc.res.ResultText, got.ResultText) || (utf8.ValidString(tc.res.ResultText) && !utf8.ValidString(got.ResultText)) {
			t.Errorf("%s: text %q is not a whole-character prefix of the output", tc.name, got.ResultText)
		}
		// The cut keeps as much as fits: one more character would not.
		if rest := tc.res.ResultText[len(got.ResultText):]; rest != "" && got.Error == tc.res.Error {
			_, size := utf8.DecodeRuneInString(rest)
			more := *got
			more.ResultText = tc.res.ResultText[:len(got.ResultText)+size]
			if jsonsize.Of(&more) <= tc.limit {
				t.Errorf("%s: cut at %d bytes, but %d would fit", tc.name, len(got.ResultText), len(more.ResultText))
			}
		}
	}
}

// FuzzFitResult: whatever the output and the limit, the fitted result fits, and its text is a prefix of
// the output.
func FuzzFitResult(f *testing.F) {
	f.Add("hello", "", "", int64(40))
	f.Add(strings.Repeat("\x01<>", 100), `{"a":1}`, "boom", int64(200))
	f.Add("a\xffb\u2028c", `[1,2]`, "", int64(60))
	f.Fuzz(func(t *testing.T, text, data, errMsg string, limit int64) {
		if limit < 200 || limit > 1<<20 {
			limit = 200 + (limit&0xffff+0xffff)%0xffff
		}
		res := &orchestrator.Result{ResultType: "deterministic", ResultText: text, Error: errMsg}
		if json.Valid([]byte(data)) {
			res.ResultData = json.RawMessage(data)
		}
		got, info := fitResult(res, limit)
		if n := jsonsize.Of(got); n > limit {
			t.Fatalf("fitted result is %d bytes as JSON, over %d", n, limit)
		}
		if info == nil && got != res {
			t.Fatal("a changed result without an event")
		}
		if !strings.HasPrefix(text, got.ResultText) {
			t.Fatalf("text %q is not a prefix of %q", got.ResultText, text)
		}
	})
}
