package broker

// conn_security.go is the security layer of a connection: TLS on SSL and SASL_SSL listeners
// (Kafka's SslTransportLayer) and, on SASL listeners, Kafka's SaslServerAuthenticator state
// machine, which owns a connection from its first byte until the client has authenticated
// and again while it re-authenticates (KIP-368).
//
// Before authentication only ApiVersions and SaslHandshake are served; SaslHandshake v0 makes
// the client send its tokens as bare size-prefixed frames, v1 wraps them in SaslAuthenticate
// requests. An authentication failure is answered (when Kafka answers) only after
// connection.failed.authentication.delay.ms, and then the connection is closed. Once
// authenticated, every request carries the authenticated principal; when the session
// lifetime (connections.max.reauth.ms, bounded by the credential's expiry) has passed, any
// request other than a SaslHandshake that starts a re-authentication closes the connection.

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/sasl"
	"github.com/samsa-kafka/samsa/internal/security/tlsconf"
)

// Listener security protocols (Kafka's SecurityProtocol names).
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// ListenerSecurity is what one listener needs to secure its connections. A nil
// *ListenerSecurity on a SocketServer is PLAINTEXT.
type ListenerSecurity struct {
	// Protocol is the listener's security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	// TLS is the server configuration of SSL and SASL_SSL listeners.
	TLS *tls.Config
	// Principals maps a client certificate to the principal on SSL listeners
	// (ssl.principal.mapping.rules); nil means the DEFAULT rule.
	Principals *tlsconf.PrincipalMapper
	// SASL serves the enabled mechanisms on SASL_PLAINTEXT and SASL_SSL listeners.
	SASL *sasl.Server
	// ReauthMax is connections.max.reauth.ms; 0 means sessions do not expire unless the
	// credential does.
	ReauthMax time.Duration
	// FailedAuthDelay is connection.failed.authentication.delay.ms: how long a failed
	// authentication waits before its answer and the close.
	FailedAuthDelay time.Duration

	// mechs replaces SASL in tests of the state machine.
	mechs saslMechanisms

	// liveSASL and livePrincipals, when set, hold the SASL server and principal mapper in
	// force and win over SASL and Principals: dynamic listener configs swap them for new
	// authentications without touching open connections.
	liveSASL       *atomic.Pointer[sasl.Server]
	livePrincipals *atomic.Pointer[tlsconf.PrincipalMapper]
}

// Validate checks that the listener has what its protocol needs.
func (ls *ListenerSecurity) Validate() error {
	if ls == nil {
		return nil
	}
	switch ls.Protocol {
	case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
	default:
		return fmt.Errorf("broker: unknown security protocol %q", ls.Protocol)
	}
	if ls.usesTLS() && ls.TLS == nil {
		return fmt.Errorf("broker: %s listener without a TLS configuration", ls.Protocol)
	}
	if ls.usesSASL() && ls.mechanisms() == nil {
		return fmt.Errorf("broker: %s listener without SASL mechanisms", ls.Protocol)
	}
	if ls.ReauthMax < 0 || ls.FailedAuthDelay < 0 {
		return errors.New("broker: negative connections.max.reauth.ms or connection.failed.authentication.delay.ms")
	}
	return nil
}

func (ls *ListenerSecurity) usesTLS() bool {
	return ls != nil && (ls.Protocol == ProtocolSSL || ls.Protocol == ProtocolSASLSSL)
}

func (ls *ListenerSecurity) usesSASL() bool {
	return ls != nil && (ls.Protocol == ProtocolSASLPlaintext || ls.Protocol == ProtocolSASLSSL)
}

// mechanisms is the SASL server as the state machine uses it (nil when none is set; a nil
// *sasl.Server must not become a non-nil interface).
func (ls *ListenerSecurity) mechanisms() saslMechanisms {
	if ls.mechs != nil {
		return ls.mechs
	}
	if ls.liveSASL != nil {
		if srv := ls.liveSASL.Load(); srv != nil {
			return srv
		}
	}
	if ls.SASL != nil {
		return ls.SASL
	}
	return nil
}

// saslMechanisms is the part of *sasl.Server the authenticator uses.
type saslMechanisms interface {
	Mechanisms() []string
	Start(mechanism string) (sasl.Session, error)
}

// saslMaxReceiveSize is sasl.server.max.receive.size's default: the largest frame accepted
// before the client has authenticated, so an anonymous client cannot make the broker
// allocate socket.request.max.bytes.
const saslMaxReceiveSize = 524288

// minReauthInterval is KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS: a SaslHandshake
// sooner than this after the previous re-authentication began is an ordinary request
// (answered ILLEGAL_SASL_STATE by the handler).
const minReauthInterval = time.Second

// connSecurity is one connection's security state.
type connSecurity struct {
	principal security.Principal // SSL: from the certificate; otherwise Anonymous until SASL completes
	auth      *saslAuthenticator // nil unless SASL
}

// secureConn runs the TLS handshake on SSL listeners and sets up the connection's security
// state. It returns the connection to read and write (the TLS one on SSL listeners); ok is
// false when the connection must be closed.
func (s *SocketServer) secureConn(ctx context.Context, raw net.Conn, idle time.Duration, log *logrus.Entry) (net.Conn, *connSecurity, bool) {
	ls := s.Security
	cs := &connSecurity{principal: security.Anonymous}
	c := raw
	if ls.usesTLS() {
		tc := tls.Server(raw, ls.TLS)
		tc.SetDeadline(time.Now().Add(idle))
		hctx, cancel := context.WithTimeout(ctx, idle)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.authFailureLog(log, "SSL handshake failed", err)
			}
			return nil, nil, false
		}
		tc.SetDeadline(time.Time{})
		c = tc
		if ls.Protocol == ProtocolSSL {
			p, err := s.sslPrincipal(tc.ConnectionState())
			if err != nil {
				s.authFailureLog(log, "SSL principal mapping failed", err)
				return nil, nil, false
			}
			cs.principal = p
		}
	}
	if ls.usesSASL() {
		cs.auth = &saslAuthenticator{mechs: ls.mechanisms(), reauthMax: ls.ReauthMax}
	}
	return c, cs, true
}

// sslPrincipal is Kafka's DefaultKafkaPrincipalBuilder on an SSL connection.
func (s *SocketServer) sslPrincipal(st tls.ConnectionState) (security.Principal, error) {
	m := s.Security.Principals
	if lp := s.Security.livePrincipals; lp != nil && lp.Load() != nil {
		m = lp.Load()
	}
	if m == nil {
		var err error
		if m, err = defaultPrincipalMapper(); err != nil {
			return security.Principal{}, err
		}
	}
	return m.Principal(st)
}

// defaultPrincipalMapper is ssl.principal.mapping.rules' default, for listeners built
// without a mapper.
var defaultPrincipalMapper = sync.OnceValues(func() (*tlsconf.PrincipalMapper, error) {
	return tlsconf.NewPrincipalMapper("DEFAULT")
})

// authFailureLog logs a failed authentication at Info, as Kafka's Selector does, rate-limited
// so that a client retrying bad credentials cannot flood the log.
func (s *SocketServer) authFailureLog(log *logrus.Entry, what string, err error) {
	l := log.WithError(err)
	var ae *sasl.AuthError
	if errors.As(err, &ae) {
		l = l.WithField("detail", ae.Detail())
	}
	if s.limiter.allow(time.Now()) {
		l.Info("failed authentication: " + what)
	} else {
		l.Debug("failed authentication: " + what)
	}
}

// failAuthentication waits connection.failed.authentication.delay.ms (Kafka's
// DelayedAuthenticationFailureClose), writes the failure response if there is one and
// returns; the caller closes the connection.
func (s *SocketServer) failAuthentication(ctx context.Context, c net.Conn, log *logrus.Entry, f *authFailure, idle time.Duration) {
	if f.delayed {
		s.authFailureLog(log, "SASL", f.err)
		if d := s.Security.FailedAuthDelay; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	} else {
		log.WithError(f.err).Debug("closing connection during SASL authentication")
	}
	if len(f.reply) > 0 {
		c.SetWriteDeadline(time.Now().Add(idle))
		c.Write(f.reply)
	}
}

// saslState mirrors SaslServerAuthenticator.SaslState.
type saslState uint8

const (
	saslInitialRequest         saslState = iota // first frame: ApiVersions or SaslHandshake
	saslHandshakeOrVersions                     // ApiVersions or SaslHandshake
	saslHandshakeRequest                        // after ApiVersions: SaslHandshake
	saslAuthenticate                            // tokens (bare, or in SaslAuthenticate after handshake v1)
	saslComplete                                // authenticated: requests go to the handler
	saslReauthProcessHandshake                  // re-authentication: its SaslHandshake
	saslReauthBadMechanism                      // re-authentication asked for another mechanism
)

// authFailure ends a connection during authentication. delayed is Kafka's
// AuthenticationException (answer after the failed-authentication delay); otherwise the
// connection closes at once, as Kafka does on an invalid request or an I/O error.
type authFailure struct {
	err     error
	reply   []byte // full response frame to send before closing, or nil
	delayed bool
}

// saslAuthenticator is Kafka's SaslServerAuthenticator plus the re-authentication parts of
// KafkaChannel, for one connection. Only the connection's goroutine uses it.
type saslAuthenticator struct {
	mechs     saslMechanisms
	reauthMax time.Duration

	state     saslState
	headers   bool // SaslHandshake v1+: tokens are SaslAuthenticate requests
	mechanism string
	session   sasl.Session
	principal security.Principal
	expiry    time.Time // session expiration; zero: none

	reauthenticating bool
	prevMechanism    string
	prevPrincipal    security.Principal
	lastReauthStart  time.Time
	badMechanism     string // REAUTH_BAD_MECHANISM's message
	reauths          int    // completed re-authentications
}

func (a *saslAuthenticator) complete() bool { return a.state == saslComplete }

// maybeBeginReauth is KafkaChannel.maybeBeginServerReauthentication for an authenticated
// connection whose next frame is a SaslHandshake: true when that frame starts a
// re-authentication, which needs a session with an expiry and at most one start a second.
func (a *saslAuthenticator) maybeBeginReauth(now time.Time) bool {
	if a.state != saslComplete || a.expiry.IsZero() {
		return false
	}
	if !a.lastReauthStart.IsZero() && now.Sub(a.lastReauthStart) < minReauthInterval {
		return false
	}
	a.lastReauthStart = now
	a.reauthenticating = true
	a.prevMechanism, a.prevPrincipal = a.mechanism, a.principal
	a.state = saslReauthProcessHandshake
	a.session = nil
	return true
}

// expired is KafkaChannel.serverAuthenticationSessionExpired.
func (a *saslAuthenticator) expired(now time.Time) bool {
	return !a.expiry.IsZero() && now.After(a.expiry)
}

// frame consumes one frame received while authenticating. It returns the response frame to
// write, or dispatch=true for an ApiVersions request the handler answers as usual, or a
// failure that ends the connection.
func (a *saslAuthenticator) frame(body []byte, now time.Time) (reply []byte, dispatch bool, f *authFailure) {
	switch a.state {
	case saslReauthBadMechanism:
		return nil, false, &authFailure{err: errors.New(a.badMechanism), delayed: true}
	case saslAuthenticate:
		if a.headers {
			return a.authenticateRequest(body, now)
		}
		return a.bareToken(body, now)
	case saslComplete:
		return nil, false, &authFailure{err: errors.New("broker: SASL frame after authentication completed")}
	default:
		return a.kafkaRequest(body)
	}
}

// kafkaRequest is handleKafkaRequest: ApiVersions or SaslHandshake before the tokens.
func (a *saslAuthenticator) kafkaRequest(body []byte) ([]byte, bool, *authFailure) {
	if len(body) < minRequestHeaderSize {
		if a.state == saslInitialRequest { // not a Kafka request: Kafka would take it as a GSSAPI token
			return nil, false, &authFailure{delayed: true,
				err: errors.New("Exception handling first SASL packet from client, GSSAPI is not supported by server")}
		}
		return nil, false, &authFailure{err: fmt.Errorf("%w: %d-byte request header", errMalformed, len(body))}
	}
	key := int16(binary.BigEndian.Uint16(body))
	if a.state == saslInitialRequest {
		a.state = saslHandshakeOrVersions
	}
	if key != 18 && key != 17 { // checked before decoding, as Kafka does
		return nil, false, &authFailure{delayed: true,
			err: fmt.Errorf("Unexpected Kafka request of type %s during SASL handshake.", apiName(key))}
	}
	h, req, err := parseRequest(body)
	if key == 18 {
		if a.state != saslHandshakeOrVersions {
			return nil, false, &authFailure{err: fmt.Errorf("Unexpected ApiVersions request received during SASL authentication state %d", a.state)}
		}
		if err != nil && !errors.Is(err, errUnsupportedVer) {
			return nil, false, &authFailure{err: err}
		}
		// An unsupported version is answered by the socket server; a bad software name
		// by the handler with INVALID_REQUEST. Neither moves the state on.
		if err == nil {
			if av := req.(*kmsg.ApiVersionsRequest); av.Version < 3 ||
				(softwareNameRe.MatchString(av.ClientSoftwareName) && softwareNameRe.MatchString(av.ClientSoftwareVersion)) {
				a.state = saslHandshakeRequest
			}
		}
		return nil, true, nil
	}
	if err != nil {
		return nil, false, &authFailure{err: err}
	}
	return a.handshake(h, req.(*kmsg.SASLHandshakeRequest))
}

// handshake is handleHandshakeRequest.
func (a *saslAuthenticator) handshake(h requestHeader, req *kmsg.SASLHandshakeRequest) ([]byte, bool, *authFailure) {
	a.headers = req.Version >= 1
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = a.mechs.Mechanisms()
	if !slices.Contains(resp.SupportedMechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return nil, false, &authFailure{delayed: true, reply: appendResponse(nil, h.correlationID, resp),
			err: fmt.Errorf("Unsupported SASL mechanism %s", req.Mechanism)}
	}
	reply := appendResponse(nil, h.correlationID, resp)
	if a.reauthenticating && req.Mechanism != a.prevMechanism {
		// Kafka answers the handshake and fails on the next token (REAUTH_BAD_MECHANISM).
		a.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			req.Mechanism, a.prevMechanism)
		a.state = saslReauthBadMechanism
		return reply, false, nil
	}
	sess, err := a.mechs.Start(req.Mechanism)
	if err != nil {
		return nil, false, &authFailure{err: fmt.Errorf("broker: start SASL mechanism %s: %w", req.Mechanism, err)}
	}
	a.mechanism, a.session, a.state = req.Mechanism, sess, saslAuthenticate
	return reply, false, nil
}

// bareToken handles a token after SaslHandshake v0: the frame is the token and the reply
// is the server's token, size-prefixed. Kafka sends nothing on failure.
func (a *saslAuthenticator) bareToken(body []byte, now time.Time) ([]byte, bool, *authFailure) {
	out, done, err := a.session.Step(body)
	if err == nil && done {
		a.finish(now)
		err = a.checkPrincipal()
	}
	if err != nil {
		return nil, false, &authFailure{err: err, delayed: true}
	}
	if done {
		a.state = saslComplete
	}
	reply := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(out)), uint32(len(out)))
	return append(reply, out...), false, nil
}

// authenticateRequest handles a SaslAuthenticate request after SaslHandshake v1+.
func (a *saslAuthenticator) authenticateRequest(body []byte, now time.Time) ([]byte, bool, *authFailure) {
	h, req, err := parseRequest(body)
	if err != nil {
		return nil, false, &authFailure{err: err}
	}
	ar, ok := req.(*kmsg.SASLAuthenticateRequest)
	if !ok {
		f := &authFailure{delayed: true, err: fmt.Errorf("Unexpected Kafka request of type %s during SASL authentication.", apiName(h.key))}
		if resp := illegalSaslStateResponse(req); resp != nil {
			f.reply = appendResponse(nil, h.correlationID, resp)
		}
		return nil, false, f
	}
	resp := ar.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, done, err := a.session.Step(ar.SASLAuthBytes)
	if err == nil && done {
		err = a.checkPrincipalOf(a.session.Principal())
	}
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := clientMessage(err, a.reauthenticating)
		resp.ErrorMessage = &msg
		return nil, false, &authFailure{err: err, delayed: true, reply: appendResponse(nil, h.correlationID, resp)}
	}
	if out == nil {
		out = []byte{} // a response even for an empty token
	}
	resp.SASLAuthBytes = out
	if done {
		resp.SessionLifetimeMillis = a.finish(now)
		a.state = saslComplete
	}
	return appendResponse(nil, h.correlationID, resp), false, nil
}

// clientMessage is what SaslAuthenticate reports for a failed exchange: a mechanism's
// failure decides itself whether its words reach the client (sasl.AuthError); any other
// error is ours and reported as it is.
func clientMessage(err error, reauthenticating bool) string {
	var ae *sasl.AuthError
	if errors.As(err, &ae) {
		return ae.ClientMessage(reauthenticating)
	}
	return err.Error()
}

// checkPrincipal is ReauthInfo.ensurePrincipalUnchanged for the session's principal.
func (a *saslAuthenticator) checkPrincipal() error { return a.checkPrincipalOf(a.principal) }

func (a *saslAuthenticator) checkPrincipalOf(p security.Principal) error {
	if a.reauthenticating && p != a.prevPrincipal {
		return fmt.Errorf("Cannot change principals during re-authentication from %s.%s: %s.%s",
			a.prevPrincipal.Type, a.prevPrincipal.Name, p.Type, p.Name)
	}
	return nil
}

// finish records a completed exchange: the principal and the session expiry
// (ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs). It returns the session
// lifetime in milliseconds, 0 when the session does not expire.
func (a *saslAuthenticator) finish(now time.Time) int64 {
	a.principal = a.session.Principal()
	if a.reauthenticating {
		a.reauths++
	}
	a.expiry = time.Time{}
	credExpiry := a.session.Expiry()
	maxSet := a.reauthMax > 0
	if credExpiry.IsZero() && !maxSet {
		a.reauthenticating = false
		return 0
	}
	var ms int64
	switch {
	case credExpiry.IsZero():
		ms = a.reauthMax.Milliseconds()
	case !maxSet:
		ms = credExpiry.UnixMilli() - now.UnixMilli()
	default:
		ms = min(credExpiry.UnixMilli()-now.UnixMilli(), a.reauthMax.Milliseconds())
	}
	ms = max(ms, 0)
	a.expiry = now.Add(time.Duration(ms) * time.Millisecond)
	a.reauthenticating = false
	return ms
}

// illegalSaslStateResponse is the request's error response with ILLEGAL_SASL_STATE, for the
// requests a client may send out of turn during authentication; nil for others.
func illegalSaslStateResponse(req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	return nil
}

// apiName names key in error messages: Kafka's ApiKeys name for the APIs of an
// authentication exchange, kmsg's name for the rest (only logged).
func apiName(key int16) string {
	switch key {
	case 17:
		return "SASL_HANDSHAKE"
	case 18:
		return "API_VERSIONS"
	case 36:
		return "SASL_AUTHENTICATE"
	}
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return fmt.Sprintf("unknown API %d", key)
}

// isSaslHandshake reports whether a frame body is a SaslHandshake request.
func isSaslHandshake(body []byte) bool {
	return len(body) >= 2 && binary.BigEndian.Uint16(body) == 17
}
