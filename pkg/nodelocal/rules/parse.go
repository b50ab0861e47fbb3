package rules

import (
	"errors"
	"strings"
)

// Listed is one rule as `iptables -S CHAIN` prints it.
type Listed struct {
	// Chain is the chain after -A.
	Chain string
	// Args is everything after the chain, unquoted: a rule specification
	// that iptables -D accepts.
	Args []string
	// Comment is the value of --comment, or "".
	Comment string
}

// ParseListLine parses one line of `iptables -S` output. Lines that are not
// rules (-P, -N) return ok == false and no error.
func ParseListLine(line string) (l Listed, ok bool, err error) {
	toks, err := splitWords(line)
	if err != nil {
		return Listed{}, false, err
	}
	if len(toks) < 2 || toks[0] != "-A" {
		return Listed{}, false, nil
	}
	l = Listed{Chain: toks[1], Args: toks[2:]}
	for i := 0; i+1 < len(l.Args); i++ {
		if l.Args[i] == "--comment" {
			l.Comment = l.Args[i+1]
			break
		}
	}
	return l, true, nil
}

var errUnterminated = errors.New("unterminated quote in iptables output")

// splitWords splits a line the way iptables quotes it: words are separated by
// spaces; a double-quoted word may contain spaces and backslash escapes.
func splitWords(line string) ([]string, error) {
	var out []string
	var b strings.Builder
	inWord, inQuote := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(line):
			i++
			b.WriteByte(line[i])
		case c == '"':
			inQuote = !inQuote
			inWord = true
		case !inQuote && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if inWord {
				out = append(out, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if inQuote {
		return nil, errUnterminated
	}
	if inWord {
		out = append(out, b.String())
	}
	return out, nil
}
