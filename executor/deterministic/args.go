package deterministic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/cmdline"
)

// BuildArgs returns the argv of a deterministic run: the words of command, split as
// [orchestrator.Blueprint].Command says (quotes honoured, nothing expanded, never a shell), followed by
// the flags [parameterArgs] renders from parameters.
//
// For example,
//
//	BuildArgs(`python -m crawler.main`, `{"url":"https://x.com","depth":2}`)
//	→ ["python", "-m", "crawler.main", "--depth", "2", "--url", "https://x.com"]
//
// Note the order: the parameters name url first, but this function sorts the names (docs/decisions.md), so the same parameters always give the same command line.
func BuildArgs(command string, parameters json.RawMessage) ([]string, error) {
	argv, err := cmdline.Split(command)
	if err != nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_command", "command: %v", err)
	}
	flags, err := parameterArgs(parameters)
	if err != nil {
		return nil, err
	}
	return append(argv, flags...), nil
}

// parameterArgs renders a parameters object (a JSON object; empty or null means none) as command-line flags,
// by these rules (docs/executors.md):
//
//   - Names are passed as they are (no case conversion), one flag each, in lexicographic (byte) order of the
//     names. JSON objects are unordered and Go maps have no order, so sorting is what makes the command line
//     deterministic; a program that parses flags does not care about their order. Should a document repeat a
//     name, the last value wins, as in encoding/json.
//   - true → --name; false and null → omitted.
//   - A string → --name value, the value as is (no quoting, it goes straight to exec); the empty string →
//     --name "" (two arguments, the second empty).
//   - A number → its text exactly as written in the JSON (2 stays "2", 2.50 stays "2.50", 1e21 stays
//     "1e21"): the number is never converted to a float and back.
//   - An array → one --name with the elements joined by commas: strings as they are, numbers as written,
//     true/false/null spelled as in JSON, nested arrays and objects as compact JSON. Commas inside elements
//     are not escaped; a program that needs nested structure should read the parameters JSON from stdin.
//     An empty array → --name "".
//   - An object → --name with its compact JSON.
//   - A value that begins with "-" (a negative number, "-v", an array whose first element is negative) is
//     passed as one argument, --name=value, so the program's flag parser cannot take it for a flag.
//
// Names must make sane flags: an empty name, a name that starts with '-', or one containing '=', white space
// or a control character is rejected with an [orchestrator.ErrInvalid] error naming every such key; so is a
// value containing a NUL byte, which no argv can carry.
func parameterArgs(parameters json.RawMessage) ([]string, error) {
	raw := bytes.TrimSpace(parameters)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_parameters", "parameters must be a JSON object")
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_parameters", "parameters are not valid JSON: %v", err)
	}
	keys := make([]string, 0, len(params))
	var bad []string
	for k := range params {
		if !validName(k) {
			bad = append(bad, strconv.Quote(k))
			continue
		}
		keys = append(keys, k)
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_parameter_name",
			"parameter names %s cannot be passed as command-line flags (a name must be non-empty, must not start with '-' and must not contain '=', white space or control characters)",
			strings.Join(bad, ", "))
	}
	sort.Strings(keys)
	args := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		value, present, err := renderValue(params[k])
		if err != nil {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_parameters", "parameter %q: %v", k, err)
		}
		switch {
		case !present:
		case value == nil:
			args = append(args, "--"+k)
		case strings.HasPrefix(*value, "-"):
			args = append(args, "--"+k+"="+*value)
		default:
			args = append(args, "--"+k, *value)
		}
	}
	return args, nil
}

func validName(k string) bool {
	if k == "" || k[0] == '-' {
		return false
	}
	for _, r := range k {
		if r == '=' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// renderValue renders one top-level value: present=false means no flag at all (false, null); value=nil
// means a bare flag (true).
func renderValue(raw json.RawMessage) (value *string, present bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false, fmt.Errorf("empty value")
	}
	var s string
	switch raw[0] {
	case 't':
		return nil, true, nil
	case 'f', 'n':
		return nil, false, nil
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, false, err
		}
		parts := make([]string, len(elems))
		for i, e := range elems {
			if parts[i], err = renderElement(e); err != nil {
				return nil, false, err
			}
		}
		s = strings.Join(parts, ",")
	default:
		if s, err = renderElement(raw); err != nil {
			return nil, false, err
		}
	}
	if strings.IndexByte(s, 0) >= 0 {
		return nil, false, fmt.Errorf("value contains a NUL byte, which cannot be passed as an argument")
	}
	return &s, true, nil
}

// renderElement renders a scalar as text and a container as compact JSON.
func renderElement(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", fmt.Errorf("empty value")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	case '{', '[':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", err
		}
		return b.String(), nil
	default:
		// Numbers, true, false, null: the JSON text itself. encoding/json has already checked it.
		return string(raw), nil
	}
}
