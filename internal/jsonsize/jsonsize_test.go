package jsonsize

import (
	"strings"
	"testing"
)

func TestCutString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain ascii", "<tag> & \"quotes\"\n\t\x01", "héllo wörld ✓", "a\u2028b\u2029c", "bad \xff byte", strings.Repeat("\x00é", 50)} {
		full := Of(s) - 2
		for budget := int64(0); budget <= full+1; budget++ {
			got := CutString(s, budget)
			if !strings.HasPrefix(s, got) {
				t.Fatalf("CutString(%q, %d) = %q, not a prefix", s, budget, got)
			}
			n := Of(got) - 2
			if n > budget {
				t.Fatalf("CutString(%q, %d) = %q, which encodes to %d bytes", s, budget, got, n)
			}
			// Maximal: the next character, when it is ASCII (whole on its own), would not have fitted.
			if len(got) < len(s) && s[len(got)] < 0x80 {
				if n := Of(s[:len(got)+1]) - 2; n <= budget {
					t.Fatalf("CutString(%q, %d) = %q, but one more character (%d bytes) fits too", s, budget, got, n)
				}
			}
		}
		if got := CutString(s, full); got != s {
			t.Errorf("CutString(%q, its own size) = %q, want it whole", s, got)
		}
	}
}
