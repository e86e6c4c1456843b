package deterministic

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

func TestBuildArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		params  string
		want    []string
	}{
		{"crawler example, sorted", "python -m crawler.main", `{"url":"https://x.com","depth":2}`,
			[]string{"python", "-m", "crawler.main", "--depth", "2", "--url", "https://x.com"}},
		{"no parameters", "prog", ``, []string{"prog"}},
		{"null parameters", "prog", `null`, []string{"prog"}},
		{"empty object", "prog", ` {} `, []string{"prog"}},
		{"quoted command words", `python -c "import sys; print(1)" 'a b'`, `{}`,
			[]string{"python", "-c", "import sys; print(1)", "a b"}},
		{"true is a bare flag", "prog", `{"verbose":true}`, []string{"prog", "--verbose"}},
		{"false and null are omitted", "prog", `{"dry":false,"limit":null,"x":1}`, []string{"prog", "--x", "1"}},
		{"array of strings", "prog", `{"patterns":["*.html","*.md"]}`, []string{"prog", "--patterns", "*.html,*.md"}},
		{"array of numbers keeps their text", "prog", `{"n":[1,2.50,1e21,-0]}`, []string{"prog", "--n", "1,2.50,1e21,-0"}},
		{"mixed array", "prog", `{"m":[1,"a",true,false,null,{"b": 1},[2, 3]]}`,
			[]string{"prog", "--m", `1,a,true,false,null,{"b":1},[2,3]`}},
		{"empty array", "prog", `{"tags":[]}`, []string{"prog", "--tags", ""}},
		{"object as compact JSON, key order kept", "prog", `{"cfg":{ "z": [1, 2], "a": {"k": "v"} }}`,
			[]string{"prog", "--cfg", `{"z":[1,2],"a":{"k":"v"}}`}},
		{"integer stays integer", "prog", `{"depth":2}`, []string{"prog", "--depth", "2"}},
		{"big exponent stays as written", "prog", `{"big":1e21,"e":1E+2}`, []string{"prog", "--big", "1e21", "--e", "1E+2"}},
		{"large integer is not rounded", "prog", `{"id":12345678901234567890}`, []string{"prog", "--id", "12345678901234567890"}},
		{"negative number uses =", "prog", `{"offset":-3}`, []string{"prog", "--offset=-3"}},
		{"string starting with - uses =", "prog", `{"s":"-v","t":"--x"}`, []string{"prog", "--s=-v", "--t=--x"}},
		{"array starting negative uses =", "prog", `{"a":[-1,2]}`, []string{"prog", "--a=-1,2"}},
		{"dash inside is fine", "prog", `{"range":"1-2"}`, []string{"prog", "--range", "1-2"}},
		{"empty string value", "prog", `{"k":""}`, []string{"prog", "--k", ""}},
		{"string kept as is", "prog", `{"q":"a b; rm -rf / $HOME \"x\""}`, []string{"prog", "--q", `a b; rm -rf / $HOME "x"`}},
		{"escapes decoded", "prog", `{"s":"tab\there\u00e9"}`, []string{"prog", "--s", "tab\thereé"}},
		{"unicode names and values", "prog", `{"名前":"日本語","emoji":"🙂"}`, []string{"prog", "--emoji", "🙂", "--名前", "日本語"}},
		{"byte order sort", "prog", `{"b":1,"a":1,"B":1,"a_b":1,"a-b":1}`,
			[]string{"prog", "--B", "1", "--a", "1", "--a-b", "1", "--a_b", "1", "--b", "1"}},
		{"names as is, no case conversion", "prog", `{"maxDepth":3,"dry_run":true}`, []string{"prog", "--dry_run", "--maxDepth", "3"}},
		{"duplicate name: last wins", "prog", `{"a":1,"a":2}`, []string{"prog", "--a", "2"}},
		{"NUL escaped inside an object is fine", "prog", `{"o":{"s":"a\u0000b"}}`, []string{"prog", "--o", `{"s":"a\u0000b"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := BuildArgs(tt.command, json.RawMessage(tt.params))
			if err != nil {
				t.Fatalf("BuildArgs(%q, %s) error = %v", tt.command, tt.params, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("BuildArgs(%q, %s)\n got %q\nwant %q", tt.command, tt.params, got, tt.want)
			}
		})
	}
}

func TestBuildArgsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, command, params, wantIn string
	}{
		{"empty name", "prog", `{"":1}`, `""`},
		{"name starting with -", "prog", `{"-x":1}`, `"-x"`},
		{"name with =", "prog", `{"a=b":1}`, `"a=b"`},
		{"name with space", "prog", `{"a b":1}`, `"a b"`},
		{"name with tab", "prog", `{"a\tb":1}`, `"a\tb"`},
		{"name with control", "prog", `{"a\u0001":1}`, `"a\x01"`},
		{"name with unicode space", "prog", `{"a\u00a0b":1}`, `"a\u00a0b"`},
		{"every bad name listed", "prog", `{"-a":1,"b=c":2,"ok":3}`, `"-a", "b=c"`},
		{"array parameters", "prog", `[1,2]`, "JSON object"},
		{"string parameters", "prog", `"x"`, "JSON object"},
		{"number parameters", "prog", `1`, "JSON object"},
		{"invalid JSON", "prog", `{"a":}`, "not valid JSON"},
		{"NUL in value", "prog", `{"s":"a\u0000b"}`, "NUL"},
		{"NUL in array element", "prog", `{"s":["a\u0000"]}`, "NUL"},
		{"unterminated quote in command", `python "x`, `{}`, "command"},
		{"empty command", `   `, `{}`, "command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := BuildArgs(tt.command, json.RawMessage(tt.params))
			if err == nil {
				t.Fatalf("BuildArgs(%q, %s) = %q, want an error", tt.command, tt.params, got)
			}
			if !errors.Is(err, orchestrator.ErrInvalid) {
				t.Errorf("BuildArgs(%q, %s) error %v does not match ErrInvalid", tt.command, tt.params, err)
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("BuildArgs(%q, %s) error = %q, want it to contain %q", tt.command, tt.params, err, tt.wantIn)
			}
		})
	}
}

func ExampleBuildArgs() {
	args, err := BuildArgs("python -m crawler.main", json.RawMessage(`{"url":"https://x.com","depth":2,"patterns":["*.html","*.md"],"verbose":true,"dry_run":false,"offset":-1}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", args)
	// Output:
	// ["python" "-m" "crawler.main" "--depth" "2" "--offset=-1" "--patterns" "*.html,*.md" "--url" "https://x.com" "--verbose"]
}

// FuzzBuildArgs checks that any parameters document either fails cleanly or gives a command line that a
// flag parser reads back unambiguously: every token after the command is a flag (--name or --name=value)
// or the value of the flag before it, and every name appears at most once.
func FuzzBuildArgs(f *testing.F) {
	for _, c := range []string{
		`{"url":"https://x.com","depth":2}`, `{"a":true,"b":false,"c":null}`, `{"a":[1,"x",null,{"b":[]}]}`,
		`{"n":-1,"s":"-x","e":""}`, `{"a":1,"a":2}`, `{"":1}`, `{"a=b":1}`, `[]`, `null`, `{"名":"値"}`,
		`{"o":{"x":"\u0000"}}`, `{"big":1e400}`,
	} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		args, err := BuildArgs("prog", params)
		if err != nil {
			return
		}
		if len(args) == 0 || args[0] != "prog" {
			t.Fatalf("BuildArgs(prog, %q) = %q, want it to start with prog", params, args)
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(params, &m)
		seen := map[string]bool{}
		for i := 1; i < len(args); i++ {
			tok := args[i]
			if !strings.HasPrefix(tok, "--") {
				t.Fatalf("BuildArgs(%q) = %q: token %d %q is neither a flag nor a flag's value", params, args, i, tok)
			}
			name, _, hasValue := strings.Cut(tok[2:], "=")
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++ // its value
			}
			if _, ok := m[name]; !ok {
				t.Fatalf("BuildArgs(%q) = %q: flag %q names no parameter", params, args, name)
			}
			if seen[name] {
				t.Fatalf("BuildArgs(%q) = %q: flag %q appears twice", params, args, name)
			}
			seen[name] = true
			if strings.IndexByte(tok, 0) >= 0 {
				t.Fatalf("BuildArgs(%q) = %q: NUL byte in an argument", params, args)
			}
		}
	})
}
