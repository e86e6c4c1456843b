// Package jsonsize measures values as encoding/json writes them, and cuts strings to fit a budget of
// encoded bytes: in JSON a string may take up to six times its size (a control character is written
// \u00XX, and so are <, > and &).
package jsonsize

import (
	"encoding/json"
	"unicode/utf8"
)

// Of is the size of v as the HTTP client sends it (json.Marshal, HTML characters escaped).
func Of(v any) int64 {
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

// CutString returns the longest prefix of s, whole characters only, whose JSON string encoding (without
// the quotes) takes at most budget bytes.
func CutString(s string, budget int64) string {
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
