package cmdline

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, command string
		want          []string
	}{
		{
			name:    "example echo-json",
			command: `python -c "import sys, json; print(json.dumps(json.loads(sys.stdin.read())))"`,
			want:    []string{"python", "-c", "import sys, json; print(json.dumps(json.loads(sys.stdin.read())))"},
		},
		{name: "example web-crawler", command: "python -m crawler.main", want: []string{"python", "-m", "crawler.main"}},
		{name: "blanks of every kind", command: " \t a \n\r b\t\tc  ", want: []string{"a", "b", "c"}},
		{name: "single quotes keep everything", command: `echo 'a  b' '$HOME \n "x"'`, want: []string{"echo", "a  b", `$HOME \n "x"`}},
		{name: "double quotes", command: `echo "a  'b'" "x\"y"`, want: []string{"echo", "a  'b'", `x"y`}},
		{name: "escapes in double quotes", command: `"\\ \$ \` + "`" + ` \" \n \a"`, want: []string{`\ $ ` + "` \" \\n \\a"}},
		{name: "backslash outside quotes", command: `a\ b c\\d \'e\"`, want: []string{"a b", `c\d`, `'e"`}},
		{name: "backslash inside single quotes is literal", command: `'a\'`, want: []string{`a\`}},
		{name: "line continuation", command: "a\\\nb \"c\\\nd\"", want: []string{"ab", "cd"}},
		{name: "empty quoted words", command: `a "" '' b`, want: []string{"a", "", "", "b"}},
		{name: "adjacent pieces form one word", command: `--name="my app"'s'x`, want: []string{"--name=my appsx"}},
		{
			name:    "operators are ordinary characters",
			command: `ls; rm -rf / | cat > out 2>&1 && echo $(id) ` + "`id`" + ` & *.go ~`,
			want:    []string{"ls;", "rm", "-rf", "/", "|", "cat", ">", "out", "2>&1", "&&", "echo", "$(id)", "`id`", "&", "*.go", "~"},
		},
		{name: "unicode", command: `echo "héllo wörld" 日本`, want: []string{"echo", "héllo wörld", "日本"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Split(tt.command)
			if err != nil {
				t.Fatalf("Split(%q): %v", tt.command, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Split(%q)\ngot  %q\nwant %q", tt.command, got, tt.want)
			}
		})
	}
}

func TestSplitErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command, want string
	}{
		{``, "command is empty"},
		{" \t\n ", "command is empty"},
		{`echo 'unterminated`, "unterminated ' quote"},
		{`echo "unterminated`, `unterminated " quote`},
		{`echo "it's`, `unterminated " quote`},
		{`echo \`, "unfinished backslash escape"},
		{"echo a\x00b", "NUL byte"},
		{"echo \"a\x00b\"", "NUL byte"},
	}
	for _, tt := range tests {
		got, err := Split(tt.command)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Split(%q) = %q, %v; want an error containing %q", tt.command, got, err, tt.want)
		}
	}
}

// FuzzSplit: no input panics; a successful split has at least one word; plain words joined with
// spaces split back into themselves; and any words, quoted as a shell would quote them, split back
// into themselves.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		`python -c "import sys, json; print(json.dumps(json.loads(sys.stdin.read())))"`,
		`a 'b c' "d\"e" f\ g`,
		"a\\\nb",
		`'`, `"`, `\`,
		"x,y z,,'q'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := Split(s)
		if err == nil && len(words) == 0 {
			t.Fatalf("Split(%q) returned no words and no error", s)
		}

		var plain []string
		for _, w := range strings.Fields(s) {
			if utf8.ValidString(w) && !strings.ContainsAny(w, "'\"\\\x00") {
				plain = append(plain, w)
			}
		}
		if len(plain) > 0 {
			line := strings.Join(plain, " ")
			if got, err := Split(line); err != nil || !slices.Equal(got, plain) {
				t.Fatalf("Split(%q) = %q, %v; want %q", line, got, err, plain)
			}
		}

		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return
		}
		list := strings.Split(s, ",")
		var single, double []string
		for _, w := range list {
			single = append(single, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
			double = append(double, `"`+strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(w)+`"`)
		}
		for _, line := range []string{strings.Join(single, " "), strings.Join(double, "\t")} {
			if got, err := Split(line); err != nil || !slices.Equal(got, list) {
				t.Fatalf("Split(%q) = %q, %v; want %q", line, got, err, list)
			}
		}
	})
}
