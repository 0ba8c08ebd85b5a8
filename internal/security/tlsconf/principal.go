package tlsconf

import (
	"crypto/tls"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/samsa-kafka/samsa/internal/security"
)

// The rule grammar of Kafka's SslPrincipalMapper: DEFAULT, or RULE:pattern/replacement/ with
// an optional L or U, rules separated by commas. Go's regexp prefers alternatives and lazy
// repetitions in the same order as Java's backtracking engine, so the expressions carry over.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// PrincipalMapper maps the subject of a verified client certificate to a principal name
// through ssl.principal.mapping.rules, as Kafka's SslPrincipalMapper does.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault   bool
	pattern     string
	replacement string
	whole       *regexp.Regexp // the pattern anchored at both ends (Java's Matcher.matches)
	any         *regexp.Regexp // the pattern as is (Java's String.replaceAll)
	groups      int
	contextFree bool // no ^, \A or word-boundary assertions: matching a suffix alone is exact
	lower       bool
	upper       bool
}

// NewPrincipalMapper parses ssl.principal.mapping.rules. As in Kafka, "DEFAULT" keeps the
// distinguished name as is, and an empty string gives no rules at all (every certificate is
// then refused); the broker's default value is "DEFAULT" (see PrincipalMapperFor).
func NewPrincipalMapper(rules string) (*PrincipalMapper, error) {
	var parts []string
	trimmed := strings.TrimFunc(rules, func(r rune) bool { return r <= ' ' })
	for _, m := range ruleSplitter.FindAllStringSubmatch(trimmed, -1) {
		parts = append(parts, m[1])
	}
	m := &PrincipalMapper{}
	for _, rule := range parts {
		loc := ruleParser.FindStringSubmatchIndex(rule)
		if loc == nil {
			return nil, fmt.Errorf("invalid rule: %s", rule)
		}
		if loc[1] != len(rule) {
			return nil, fmt.Errorf("invalid rule: `%s`, unmatched substring: `%s`", rule, rule[loc[1]:])
		}
		group := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return rule[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, mappingRule{isDefault: true})
			continue
		}
		pattern, ok := group(2)
		if !ok {
			continue // empty rules are ignored
		}
		replacement, _ := group(4)
		flag, _ := group(6)
		r, err := newMappingRule(pattern, replacement, flag)
		if err != nil {
			return nil, fmt.Errorf("invalid rule: %s: %w", rule, err)
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

func newMappingRule(pattern, replacement, flag string) (mappingRule, error) {
	anyRe, err := regexp.Compile(pattern)
	if err != nil {
		return mappingRule{}, err
	}
	whole, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return mappingRule{}, err
	}
	return mappingRule{
		pattern:     pattern,
		replacement: replacement,
		whole:       whole,
		any:         anyRe,
		groups:      anyRe.NumSubexp(),
		contextFree: contextFree(pattern),
		lower:       flag == "L",
		upper:       flag == "U",
	}, nil
}

func contextFree(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	free := true
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			free = false
		}
		for _, s := range r.Sub {
			walk(s)
		}
	}
	walk(re)
	return free
}

// String writes the rules as Kafka's SslPrincipalMapper.toString does.
func (m *PrincipalMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "SslPrincipalMapper(rules = [" + strings.Join(parts, ", ") + "])"
}

func (r mappingRule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.pattern + "/" + r.replacement
	if r.lower {
		s += "/L"
	} else if r.upper {
		s += "/U"
	}
	return s
}

// Name maps a distinguished name (RFC 2253 form) through the rules: the first rule that
// applies wins; no rule applying is an error (Kafka's NoMatchingRule).
func (m *PrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		name, ok, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("no rules apply to %s, rules %s", dn, m)
}

func (r mappingRule) apply(dn string) (string, bool, error) {
	if r.isDefault {
		return dn, true, nil
	}
	if !r.whole.MatchString(dn) {
		return "", false, nil
	}
	out, err := r.replaceAll(dn)
	if err != nil {
		return "", false, err
	}
	if r.lower {
		out = strings.ToLower(out)
	} else if r.upper {
		out = strings.ToUpper(out)
	}
	return out, true, nil
}

// replaceAll is Java's String.replaceAll: unlike Go's, it also replaces the empty match that
// directly follows a non-empty one (e.g. "(.*)" matches "dn" and then "" at the end).
func (r mappingRule) replaceAll(s string) (string, error) {
	matches := r.any.FindAllStringSubmatchIndex(s, -1)
	if r.contextFree {
		var all [][]int
		for i, m := range matches {
			all = append(all, m)
			e := m[1]
			if m[0] == e || (i+1 < len(matches) && matches[i+1][0] == e) {
				continue
			}
			if sub := r.any.FindStringSubmatchIndex(s[e:]); sub != nil && sub[0] == 0 && sub[1] == 0 {
				for j := range sub {
					if sub[j] >= 0 {
						sub[j] += e
					}
				}
				all = append(all, sub)
			}
		}
		matches = all
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		b.WriteString(s[last:m[0]])
		if err := r.expand(&b, s, m); err != nil {
			return "", err
		}
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// expand writes the replacement for one match with Java's Matcher.appendReplacement syntax:
// $n and ${name} refer to groups, a backslash quotes the next character. A reference to a
// group the pattern does not have is kept as literal text, as Kafka's
// escapeLiteralBackReferences arranges (when the pattern has at least one group).
func (r mappingRule) expand(b *strings.Builder, s string, m []int) error {
	rep := r.replacement
	for i := 0; i < len(rep); i++ {
		c := rep[i]
		switch c {
		case '\\':
			i++
			if i >= len(rep) {
				return errors.New("character to be escaped is missing")
			}
			_, size := utf8.DecodeRuneInString(rep[i:])
			b.WriteString(rep[i : i+size])
			i += size - 1
		case '$':
			i++
			if i >= len(rep) {
				return errors.New("illegal group reference: group index is missing")
			}
			if rep[i] == '{' {
				end := strings.IndexByte(rep[i:], '}')
				if end < 0 {
					return errors.New("named capturing group is missing trailing '}'")
				}
				name := rep[i+1 : i+end]
				idx := r.any.SubexpIndex(name)
				if idx < 0 {
					return fmt.Errorf("no group with name {%s}", name)
				}
				writeGroup(b, s, m, idx)
				i += end
				continue
			}
			if rep[i] < '0' || rep[i] > '9' {
				return errors.New("illegal group reference")
			}
			j := i
			for j < len(rep) && rep[j] >= '0' && rep[j] <= '9' {
				j++
			}
			digits := rep[i:j]
			ref := int(digits[0] - '0')
			if digits[0] != '0' && r.groups > 0 && ref > r.groups {
				// Not a group of this pattern: literal text.
				b.WriteByte('$')
				b.WriteString(digits[:1])
				continue
			}
			if ref > r.groups {
				return fmt.Errorf("no group %d", ref)
			}
			k := i + 1
			for ; k < j; k++ {
				n, err := strconv.Atoi(rep[i : k+1])
				if err != nil || n > r.groups {
					break
				}
				ref = n
			}
			writeGroup(b, s, m, ref)
			i = k - 1
		default:
			b.WriteByte(c)
		}
	}
	return nil
}

func writeGroup(b *strings.Builder, s string, m []int, g int) {
	if m[2*g] >= 0 {
		b.WriteString(s[m[2*g]:m[2*g+1]])
	}
}

// Principal maps the connection's verified client certificate to a principal, as Kafka's
// DefaultKafkaPrincipalBuilder does on an SSL listener: no client certificate gives
// User:ANONYMOUS; otherwise the subject's RFC 2253 name, as Java's X500Principal.getName()
// writes it, run through the rules.
func (m *PrincipalMapper) Principal(cs tls.ConnectionState) (security.Principal, error) {
	if len(cs.PeerCertificates) == 0 {
		return security.Anonymous, nil
	}
	dn, err := RFC2253Name(cs.PeerCertificates[0].RawSubject)
	if err != nil {
		return security.Principal{}, err
	}
	name, err := m.Name(dn)
	if err != nil {
		return security.Principal{}, fmt.Errorf("failed to map name for '%s' based on SSL principal mapping rules: %w", dn, err)
	}
	return security.User(name), nil
}

type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// The "SET" suffix makes encoding/asn1 read a SET OF.
type relativeDistinguishedNameSET []attributeTypeAndValue

// rfc2253Keywords are the attribute types Java writes by keyword in RFC 2253 names; any
// other type is written as its dotted OID with the value in hex.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// RFC2253Name writes a DER-encoded X.500 name as Java's X500Principal.getName() does (sun's
// X500Name.getRFC2253Name): the RDNs last to first, joined by ","; the values of a
// multi-valued RDN joined by "+" in encoded order.
func RFC2253Name(rawName []byte) (string, error) {
	var rdns []relativeDistinguishedNameSET
	rest, err := asn1.Unmarshal(rawName, &rdns)
	if err != nil {
		return "", fmt.Errorf("reading the certificate's subject: %w", err)
	}
	if len(rest) != 0 {
		return "", errors.New("reading the certificate's subject: trailing data")
	}
	parts := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- {
		avas := make([]string, len(rdns[i]))
		for j, ava := range rdns[i] {
			avas[j] = avaString(ava)
		}
		parts = append(parts, strings.Join(avas, "+"))
	}
	return strings.Join(parts, ","), nil
}

const (
	tagUTF8String      = 12
	tagPrintableString = 19
	tagT61String       = 20
	tagIA5String       = 22
	tagGeneralString   = 27
	tagBMPString       = 30
)

// avaString is sun.security.x509.AVA.toRFC2253String.
func avaString(ava attributeTypeAndValue) string {
	oid := ava.Type.String()
	keyword, known := rfc2253Keywords[oid]
	if !known {
		keyword = oid
	}
	val, isString := directoryString(ava.Value)
	if !known || !isString {
		return keyword + "=#" + hex.EncodeToString(ava.Value.FullBytes)
	}
	const escapees = ",=+<>#;\"\\"
	var esc []rune
	for _, c := range val {
		switch {
		case strings.ContainsRune(escapees, c):
			esc = append(esc, '\\', c)
		case c == 0:
			esc = append(esc, '\\', '0', '0')
		default:
			esc = append(esc, c)
		}
	}
	lead := 0
	for lead < len(esc) && (esc[lead] == ' ' || esc[lead] == '\r') {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && (esc[trail] == ' ' || esc[trail] == '\r') {
		trail--
	}
	var b strings.Builder
	b.WriteString(keyword)
	b.WriteByte('=')
	for i, c := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// directoryString decodes the string types Java writes as text, with Java's charsets.
func directoryString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case tagPrintableString, tagT61String, tagIA5String, tagGeneralString:
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case tagBMPString:
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	case tagUTF8String:
		return strings.ToValidUTF8(string(v.Bytes), "\uFFFD"), true
	}
	return "", false
}
