// Package wellformed checks that text can be stored and served back as it came: valid UTF-8 without NUL
// characters. Stores differ on such text — PostgreSQL refuses NUL in text and invalid UTF-8 anywhere,
// SQLite keeps the bytes and hands them back, which breaks strict JSON readers — so the coordinator
// refuses it on the way in, and the same input behaves alike on every store.
package wellformed

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// String reports why s is not well-formed text: it holds a NUL or is not valid UTF-8.
func String(s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("contains a NUL character (at byte %d)", i)
	}
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	return nil
}

// JSON reports why data, JSON text, would not decode to well-formed text: bytes that are not UTF-8, a
// string escape of NUL (\u0000), or an escape of half a UTF-16 surrogate pair (which stands for no
// character). It scans only for those, in one pass; whether data is valid JSON is the decoder's question.
func JSON(data []byte) error {
	if !utf8.Valid(data) {
		return errors.New("is not valid UTF-8")
	}
	// In valid JSON a backslash appears only in strings, where it starts an escape; so every backslash
	// found from the start, skipping each escape whole, starts one.
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\\')
		if j < 0 {
			return nil
		}
		i += j + 1
		if i >= len(data) {
			return nil
		}
		if data[i] != 'u' {
			i++ // \" \\ \/ \b \f \n \r \t: two bytes in all
			continue
		}
		r, ok := hex4(data[i+1:])
		if !ok {
			i++
			continue
		}
		i += 5
		switch {
		case r == 0:
			return fmt.Errorf("contains an escaped NUL character (\\u0000, at byte %d)", i-6)
		case r >= 0xDC00 && r < 0xE000:
			return fmt.Errorf("contains a lone low surrogate escape (\\u%04x, at byte %d)", r, i-6)
		case r >= 0xD800 && r < 0xDC00:
			if len(data) >= i+6 && data[i] == '\\' && data[i+1] == 'u' {
				if lo, ok := hex4(data[i+2:]); ok && lo >= 0xDC00 && lo < 0xE000 {
					i += 6
					continue
				}
			}
			return fmt.Errorf("contains a lone high surrogate escape (\\u%04x, at byte %d)", r, i-6)
		}
	}
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
