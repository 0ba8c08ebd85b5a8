package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"testing"

	"github.com/samsa-kafka/samsa/internal/security"
)

// The rule cases come from Kafka's SslPrincipalMapperTest.

func TestPrincipalMapperValidRules(t *testing.T) {
	for _, rules := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := NewPrincipalMapper(rules); err != nil {
			t.Errorf("%q: %v", rules, err)
		}
	}
}

func TestPrincipalMapperInvalidRules(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:^CN=(.*?$/$1/", // not a valid expression
	} {
		if m, err := NewPrincipalMapper(rules); err == nil {
			t.Errorf("%q: accepted as %s", rules, m)
		}
	}
}

func TestPrincipalMapperNames(t *testing.T) {
	m, err := NewPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, " +
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, " +
		"DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":         "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US":  "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":              "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":     "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":        "OU=JavaSoft,O=Sun Microsystems,C=US",
		"CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz":     "TKAC",
		"OU=JavaSoft,O=Sun Microsystems,C=US,CN=x.y": "X.Y",
	} {
		got, err := m.Name(dn)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestPrincipalMapperCommaWithWhitespace(t *testing.T) {
	m, err := NewPrincipalMapper(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestPrincipalMapperRulesSplitting(t *testing.T) {
	for _, c := range []struct{ want, rules string }{
		{"[]", ""},
		{"[DEFAULT]", "DEFAULT"},
		{"[RULE:/]", "RULE://"},
		{"[RULE:/.*]", "RULE:/.*/"},
		{"[RULE:/.*/L]", "RULE:/.*/L"},
		{"[RULE:/, DEFAULT]", "RULE://,DEFAULT"},
		{"[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "},
		{"[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "},
		{"[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "},
		{"[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "},
		{"[]", ",   , , ,      , , ,   "},
		{"[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"},
		{"[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "},
		{"[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"},
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		{`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`},
	} {
		m, err := NewPrincipalMapper(c.rules)
		if err != nil {
			t.Errorf("%q: %v", c.rules, err)
			continue
		}
		if got, want := m.String(), "SslPrincipalMapper(rules = "+c.want+")"; got != want {
			t.Errorf("%q:\n got %s\nwant %s", c.rules, got, want)
		}
	}
}

// Expected names computed with Kafka 3.7's SslPrincipalMapper on a JVM.
func TestPrincipalMapperJavaReplacement(t *testing.T) {
	for _, c := range []struct{ rules, dn, want string }{
		{"RULE:(.*)/x$1/", "CN=a", "xCN=ax"}, // Java also replaces the empty match at the end
		{"RULE:(.*)/<$1>/U", "CN=a", "<CN=A><>"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$4/", "CN=a,OU=b,O=c", "a@$4"},
		{"RULE:^CN=(.*?),OU=(.*)$/$12x/", "CN=a,OU=b", "a2x"},
		{"RULE:^CN=(.*?),OU=(.*)$/[$0]/", "CN=a,OU=b", "[CN=a,OU=b]"},
		{`RULE:^CN=(.*?),(.*)$/$1\/$2/L`, "CN=Ab,OU=B", "ab/ou=b"},
		{"RULE:CN=([a-z]+)/$1/", "CN=abc", "abc"},
		{"RULE:.*?/-/", "ab", "-a-b-"},
		{"RULE:[a-z]*/-/", "ab", "--"},
		{"RULE:^CN=(?<n>[a-z]+)$/${n}!/", "CN=abc", "abc!"},
		{"RULE:^CN=([a-z]+)$/$9$1/", "CN=abc", "$9abc"},
	} {
		m, err := NewPrincipalMapper(c.rules)
		if err != nil {
			t.Errorf("%s: %v", c.rules, err)
			continue
		}
		if got, err := m.Name(c.dn); err != nil || got != c.want {
			t.Errorf("%s on %s: got %q, %v; want %q", c.rules, c.dn, got, err, c.want)
		}
	}
}

func TestPrincipalMapperNoMatchingRule(t *testing.T) {
	m, err := NewPrincipalMapper("RULE:^CN=(.*)$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name("OU=x"); err == nil {
		t.Fatalf("got %q, want an error", got)
	}
	empty, err := NewPrincipalMapper("")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := empty.Name("CN=a"); err == nil {
		t.Fatalf("no rules: got %q, want an error", got)
	}
	noGroups, err := NewPrincipalMapper("RULE:^CN=a$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := noGroups.Name("CN=a"); err == nil {
		t.Fatalf("a reference to a group of a pattern without groups: got %q, want an error", got)
	}
}

// Subjects as DER, with the names Java's X500Principal.getName() gives them (JDK 25).
func TestRFC2253Name(t *testing.T) {
	for _, c := range []struct{ der, want string }{
		{"3032310b300906035504061302555331133011060355040a0c0a41636d652c20496e632e310e300c06035504030c05616c696365",
			`CN=alice,O=Acme\, Inc.,C=US`},
		{"30293127302506035504030c1e206c65616423616e642b747261696c203d203b203c783e20227122205c20",
			`CN=\ lead\#and\+trail \= \; \<x\> \"q\" \\\ `},
		{"301e310e300c06035504030c052368617368310c300a060355040b0c03610062", `OU=a\00b,CN=\#hash`},
		{"305031133011060a0992268993f22c6401191603636f6d31173015060a0992268993f22c64011916076578616d706c653120300c060355040313054d756c74693010060a0992268993f22c6401010c027531",
			"CN=Multi+UID=u1,DC=example,DC=com"},
		{"3034311c301a06035504030c134ac3bc7267656e20c39c6ec3af63c3b664c3a93114301206092a864886f70d01090116056140622e63",
			"1.2.840.113549.1.9.1=#16056140622e63,CN=Jürgen Ünïcödé"},
		{"30243113301106035504031e0a0062006d0070002000e9310d300b0603550405130431323334", "2.5.4.5=#130431323334,CN=bmp é"},
		{"301e310b30090603550403140274e9310f300d060355040304066f6374657473", "CN=#04066f6374657473,CN=té"},
		{"3010310e300c06035504030c050d2078200d", "CN=\\\r\\ x\\ \\\r"},
		{"3000", ""},
	} {
		der, err := hex.DecodeString(c.der)
		if err != nil {
			t.Fatal(err)
		}
		got, err := RFC2253Name(der)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.der, got, err, c.want)
		}
	}
	if _, err := RFC2253Name([]byte{0x30, 0x05}); err == nil {
		t.Error("truncated name accepted")
	}
}

func TestPrincipalFromConnectionState(t *testing.T) {
	m, err := NewPrincipalMapper("RULE:^CN=([a-z]+),OU=(.*)$/$1-$2/U,DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := m.Principal(tls.ConnectionState{}); err != nil || p != security.Anonymous {
		t.Fatalf("no certificate: got %v, %v", p, err)
	}
	der, _ := hex.DecodeString("3032310b300906035504061302555331133011060355040a0c0a41636d652c20496e632e310e300c06035504030c05616c696365")
	cs := tls.ConnectionState{PeerCertificates: []*x509.Certificate{{RawSubject: der}}}
	if p, err := m.Principal(cs); err != nil || p != security.User(`CN=alice,O=Acme\, Inc.,C=US`) {
		t.Fatalf("got %v, %v", p, err)
	}
	strict, _ := NewPrincipalMapper("RULE:^CN=([a-z]+)$/$1/")
	if p, err := strict.Principal(cs); err == nil {
		t.Fatalf("no rule applies, got %v", p)
	}
}
