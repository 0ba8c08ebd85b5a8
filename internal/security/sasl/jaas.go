package sasl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// JAASEntry is one login module of a sasl.jaas.config value:
// `<loginModuleClass> <controlFlag> (<optionName>=<optionValue>)*;`.
type JAASEntry struct {
	LoginModule string
	Flag        string // REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL (upper case)
	Options     map[string]string
}

// Kafka's login module classes.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// ParseJAAS reads a sasl.jaas.config value, which Kafka requires to hold exactly one login
// module (JaasContext.load).
func ParseJAAS(s string) (JAASEntry, error) {
	entries, err := ParseJAASEntries(s)
	if err != nil {
		return JAASEntry{}, err
	}
	if len(entries) != 1 {
		return JAASEntry{}, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", len(entries))
	}
	return entries[0], nil
}

// ParseJAASEntries reads every login module of a JAAS configuration the way Kafka's
// JaasConfig does: with java.io.StreamTokenizer's rules, so quoting, escapes, comments and
// the treatment of unquoted numbers match what a Kafka broker accepts.
func ParseJAASEntries(s string) ([]JAASEntry, error) {
	t := newJAASTokenizer(s)
	var entries []JAASEntry
	for t.next() != ttEOF {
		e, err := parseJAASEntry(t)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, errors.New("login module not specified in JAAS config")
	}
	return entries, nil
}

func parseJAASEntry(t *jaasTokenizer) (JAASEntry, error) {
	module, hasModule := t.sval, t.hasSval
	if t.next() == ttEOF {
		return JAASEntry{}, errors.New("login module control flag not specified in JAAS config")
	}
	if !t.hasSval {
		return JAASEntry{}, errors.New("login module control flag is not available in the JAAS config")
	}
	flag := strings.ToUpper(t.sval)
	switch flag {
	case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
	default:
		return JAASEntry{}, fmt.Errorf("invalid login module control flag '%s' in JAAS config", t.sval)
	}
	opts := make(map[string]string)
	for t.next() != ttEOF && t.ttype != ';' {
		key, hasKey := t.sval, t.hasSval
		if t.next() != '=' || t.next() == ttEOF || !t.hasSval {
			return JAASEntry{}, fmt.Errorf("value not specified for key '%s' in JAAS config", key)
		}
		if !hasKey {
			// Kafka would store the value under a null key nobody can read; refuse instead.
			return JAASEntry{}, errors.New("invalid option name in JAAS config: option names must be words or quoted strings")
		}
		opts[key] = t.sval
	}
	if t.ttype != ';' {
		return JAASEntry{}, errors.New("JAAS config entry not terminated by semi-colon")
	}
	if !hasModule || module == "" {
		return JAASEntry{}, errors.New("invalid JAAS config: login module class name missing")
	}
	return JAASEntry{LoginModule: module, Flag: flag, Options: opts}, nil
}

// Token types of java.io.StreamTokenizer; any other value is the character itself.
const (
	ttEOF    = -1
	ttNumber = -2
	ttWord   = -3
)

// Character classes, as StreamTokenizer's ctype bits.
const (
	ctWhitespace = 1 << iota
	ctDigit
	ctAlpha
	ctQuote
	ctComment
)

// jaasCtype is StreamTokenizer's default table as JaasConfig configures it: words of
// letters, Latin-1 letters, '-', '_' and '$'; numbers of digits, '.' and '-' (parseNumbers,
// so '-' is both); whitespace up to ' '; '/' a comment; '"' and '\” quotes.
var jaasCtype = func() (ct [256]byte) {
	for c := 'a'; c <= 'z'; c++ {
		ct[c] |= ctAlpha
	}
	for c := 'A'; c <= 'Z'; c++ {
		ct[c] |= ctAlpha
	}
	for c := 128 + 32; c <= 255; c++ {
		ct[c] |= ctAlpha
	}
	for c := 0; c <= ' '; c++ {
		ct[c] = ctWhitespace
	}
	ct['/'] = ctComment
	ct['"'] = ctQuote
	ct['\''] = ctQuote
	for c := '0'; c <= '9'; c++ {
		ct[c] |= ctDigit
	}
	ct['.'] |= ctDigit
	ct['-'] |= ctDigit
	ct['-'] |= ctAlpha
	ct['_'] |= ctAlpha
	ct['$'] |= ctAlpha
	return ct
}()

const (
	needChar = 1<<31 - 1 // StreamTokenizer.NEED_CHAR
	skipLF   = 1<<31 - 2 // StreamTokenizer.SKIP_LF
)

// jaasTokenizer is java.io.StreamTokenizer with slash-slash and slash-star comments on and
// end of line not significant.
type jaasTokenizer struct {
	in      []rune
	pos     int
	peekc   int
	ttype   int
	sval    string
	hasSval bool
}

func newJAASTokenizer(s string) *jaasTokenizer {
	// Java reads the string as UTF-16; invalid UTF-8 here becomes U+FFFD, as Java's decoder
	// would make of such bytes.
	in := make([]rune, 0, utf8.RuneCountInString(s))
	for _, r := range s {
		in = append(in, r)
	}
	return &jaasTokenizer{in: in, peekc: needChar}
}

func (t *jaasTokenizer) read() int {
	if t.pos >= len(t.in) {
		return -1
	}
	c := t.in[t.pos]
	t.pos++
	return int(c)
}

func ctypeOf(c int) byte {
	if c < 256 {
		return jaasCtype[c]
	}
	return ctAlpha
}

func (t *jaasTokenizer) next() int {
	for {
		tok, again := t.scan()
		if !again {
			return tok
		}
	}
}

// scan reads one token; again is true when it only skipped a comment (Java recurses).
func (t *jaasTokenizer) scan() (tok int, again bool) {
	t.sval, t.hasSval = "", false
	c := t.peekc
	if c < 0 {
		c = needChar
	}
	if c == skipLF {
		c = t.read()
		if c < 0 {
			t.ttype = ttEOF
			return ttEOF, false
		}
		if c == '\n' {
			c = needChar
		}
	}
	if c == needChar {
		c = t.read()
		if c < 0 {
			t.ttype = ttEOF
			return ttEOF, false
		}
	}
	t.ttype = c
	t.peekc = needChar

	ct := ctypeOf(c)
	for ct&ctWhitespace != 0 {
		if c == '\r' {
			c = t.read()
			if c == '\n' {
				c = t.read()
			}
		} else {
			c = t.read()
		}
		if c < 0 {
			t.ttype = ttEOF
			return ttEOF, false
		}
		ct = ctypeOf(c)
	}

	if ct&ctDigit != 0 {
		if c == '-' {
			c = t.read()
			if c != '.' && (c < '0' || c > '9') {
				t.peekc = c
				t.ttype = '-'
				return '-', false
			}
		}
		seenDot := false
		for {
			if c == '.' && !seenDot {
				seenDot = true
			} else if c < '0' || c > '9' {
				break
			}
			c = t.read()
		}
		t.peekc = c
		t.ttype = ttNumber
		return ttNumber, false
	}

	if ct&ctAlpha != 0 {
		var b strings.Builder
		for {
			b.WriteRune(rune(c))
			c = t.read()
			var nct byte = ctWhitespace
			if c >= 0 {
				nct = ctypeOf(c)
			}
			if nct&(ctAlpha|ctDigit) == 0 {
				break
			}
		}
		t.peekc = c
		t.sval, t.hasSval = b.String(), true
		t.ttype = ttWord
		return ttWord, false
	}

	if ct&ctQuote != 0 {
		quote := c
		var b strings.Builder
		d := t.read()
		for d >= 0 && d != quote && d != '\n' && d != '\r' {
			if d == '\\' {
				c = t.read()
				first := c
				if c >= '0' && c <= '7' {
					c -= '0'
					c2 := t.read()
					if c2 >= '0' && c2 <= '7' {
						c = c<<3 + (c2 - '0')
						c2 = t.read()
						if c2 >= '0' && c2 <= '7' && first <= '3' {
							c = c<<3 + (c2 - '0')
							d = t.read()
						} else {
							d = c2
						}
					} else {
						d = c2
					}
				} else {
					switch c {
					case 'a':
						c = 0x7
					case 'b':
						c = '\b'
					case 'f':
						c = 0xC
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'v':
						c = 0xB
					}
					d = t.read()
				}
			} else {
				c = d
				d = t.read()
			}
			if c < 0 {
				// A backslash at the very end: Java stores (char)-1, U+FFFF.
				c = 0xFFFF
			}
			b.WriteRune(rune(c))
		}
		if d == quote {
			t.peekc = needChar
		} else {
			t.peekc = d
		}
		t.sval, t.hasSval = b.String(), true
		t.ttype = quote
		return quote, false
	}

	if c == '/' {
		c = t.read()
		if c == '*' {
			prev := 0
			for {
				c = t.read()
				if c == '/' && prev == '*' {
					break
				}
				if c == '\r' {
					c = t.read()
					if c == '\n' {
						c = t.read()
					}
				} else if c == '\n' {
					c = t.read()
				}
				if c < 0 {
					t.ttype = ttEOF
					return ttEOF, false
				}
				prev = c
			}
			return 0, true
		}
		// "//" and, since '/' is also a comment character, a lone '/' both run to the end
		// of the line; the character after the first '/' is dropped unexamined, as in Java.
		for {
			c = t.read()
			if c == '\n' || c == '\r' || c < 0 {
				break
			}
		}
		t.peekc = c
		return 0, true
	}

	if ct&ctComment != 0 {
		for c != '\n' && c != '\r' && c >= 0 {
			c = t.read()
		}
		t.peekc = c
		return 0, true
	}
	t.ttype = c
	return c, false
}
