// Package cmdline splits a blueprint's command into the words a deterministic agent's process is started
// with.
package cmdline

import (
	"errors"
	"strings"
)

// Split splits a blueprint's command into words the way a POSIX shell would, without being one:
// blanks separate words; single quotes keep everything literally; double quotes keep everything but a
// backslash before ", \, $ or `; a backslash outside quotes escapes the next character. Nothing is expanded
// ($VAR, globs, ~) and operators (; | & > <) are ordinary characters: the words go straight to exec, so a
// command can never do more than run its own program.
//
// Hand-written because the maintained shell-word libraries either expand variables or silently stop at
// operators, and both would surprise here.
func Split(s string) ([]string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, errors.New("command contains a NUL byte")
	}
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			if quote == '"' && !strings.ContainsRune("\"\\$`\n", r) {
				cur.WriteRune('\\')
			}
			if !(r == '\n' && quote != '\'') { // backslash-newline is a line continuation
				cur.WriteRune(r)
			}
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case escaped:
		return nil, errors.New("command ends with an unfinished backslash escape")
	case quote != 0:
		return nil, errors.New("command has an unterminated " + string(quote) + " quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("command is empty")
	}
	return words, nil
}
