// Package security holds what every security piece shares: Kafka's principal. The
// sub-packages build TLS configurations (tlsconf), serve SASL mechanisms (sasl), keep SCRAM
// credentials (scramcred) and authorize requests against ACLs (acl).
package security

import (
	"fmt"
	"strings"
)

// Principal is Kafka's KafkaPrincipal: a type and a name, written "User:alice". Brokers
// authenticate every connection to one: User:ANONYMOUS on PLAINTEXT and on SSL without a
// client certificate, the certificate's mapped distinguished name on SSL with one, the
// SASL user name on SASL listeners.
type Principal struct {
	Type string // "User" for every principal a broker builds
	Name string
}

// UserType is KafkaPrincipal.USER_TYPE.
const UserType = "User"

// Anonymous is KafkaPrincipal.ANONYMOUS.
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User is the principal of a user name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String writes the principal as Kafka does: "Type:Name".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ParsePrincipal reads "Type:Name" (SecurityUtils.parseKafkaPrincipal): the name may itself
// contain colons; both parts must be non-empty.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" || name == "" {
		return Principal{}, fmt.Errorf("invalid principal %q: expected the form Type:Name, such as User:alice", s)
	}
	return Principal{Type: typ, Name: name}, nil
}
