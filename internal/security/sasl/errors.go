package sasl

import (
	"errors"
	"fmt"
)

// ErrUnsupportedMechanism is returned by Server.Start for a mechanism the listener does not
// enable; the broker answers UNSUPPORTED_SASL_MECHANISM.
var ErrUnsupportedMechanism = errors.New("unsupported SASL mechanism")

// AuthError is a failed authentication exchange. Kafka's SASL servers fail in two ways: a
// SaslAuthenticationException, whose message goes to the client as it is, and a plain
// SaslException, whose message could leak whether a user exists and is replaced by a
// generic text (SaslServerAuthenticator.handleSaslToken). Public tells them apart.
type AuthError struct {
	Mechanism string
	// Public is true when Msg may be sent to the client.
	Public bool
	// Msg is the failure as the mechanism words it (Kafka's exception message).
	Msg string
	// Err is the underlying cause, if any, for the broker's log only.
	Err error
}

// Error is the text SaslAuthenticate reports for a first authentication.
func (e *AuthError) Error() string { return e.ClientMessage(false) }

// ClientMessage is the error_message SaslAuthenticate carries: Msg when public, otherwise
// Kafka's generic text, which names re-authentication when the connection is
// re-authenticating (KIP-368).
func (e *AuthError) ClientMessage(reauthenticating bool) string {
	if e.Public {
		return e.Msg
	}
	what := "authentication"
	if reauthenticating {
		what = "re-authentication"
	}
	return "Authentication failed during " + what + " due to invalid credentials with SASL mechanism " + e.Mechanism
}

// Detail is the full failure for the broker's log, never for the client.
func (e *AuthError) Detail() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Mechanism, e.Msg, e.Err)
	}
	return e.Mechanism + ": " + e.Msg
}

func (e *AuthError) Unwrap() error { return e.Err }

// public builds a failure whose message the client sees (SaslAuthenticationException).
func public(mechanism, msg string) *AuthError {
	return &AuthError{Mechanism: mechanism, Public: true, Msg: msg}
}

// private builds a failure the client sees only as the generic text (SaslException).
func private(mechanism, msg string, cause error) *AuthError {
	return &AuthError{Mechanism: mechanism, Msg: msg, Err: cause}
}
