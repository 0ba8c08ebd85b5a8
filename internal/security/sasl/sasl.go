// Package sasl serves Kafka's SASL mechanisms on the broker side: PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512 and OAUTHBEARER (Kafka's PlainSaslServer, ScramSaslServer and
// OAuthBearerSaslServer with their default server callback handlers), configured from
// sasl.enabled.mechanisms and the listener's JAAS entries.
package sasl

import (
	"time"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

// CredentialStore looks SCRAM credentials up (the broker's cache of /config/users).
type CredentialStore interface {
	ScramCredential(mechanism, user string) (scramcred.Credential, bool)
}

// Session is one authentication exchange on one connection.
type Session interface {
	// Step consumes the client's next message and returns the server's reply. done is true
	// once the client is authenticated. An error means authentication failed; it is an
	// *AuthError whose Error() is what SaslAuthenticate reports (ClientMessage(true) during
	// a re-authentication) and whose Detail() is for the broker's log.
	Step(msg []byte) (reply []byte, done bool, err error)
	// Principal is the authenticated principal, valid once Step reported done.
	Principal() security.Principal
	// Expiry is when the credential expires (an OAUTHBEARER token's exp), zero if never;
	// the broker bounds the session lifetime by it (KIP-368).
	Expiry() time.Time
}
