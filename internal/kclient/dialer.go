package kclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/samsa-kafka/samsa/internal/sockopt"
)

// ErrAuthentication wraps every SASL failure, so callers can tell a refused login (which a
// retry does not cure) from a network error.
var ErrAuthentication = errors.New("kclient: SASL authentication failed")

// Dialer opens connections secured as the inter-broker listener is: TLS when TLS is set,
// then SASL when SASL is set (Kafka's ChannelBuilders.clientChannelBuilder for the
// inter-broker security protocol). The zero Dialer, and a nil *Dialer, dial plain TCP.
// A Dialer is read-only once built, except for its mechanism (SetSASL); share it by
// pointer.
type Dialer struct {
	// TLS is the client side of the listener's TLS (SSL, SASL_SSL). When ServerName is
	// empty, the host of the dialed address is used, so the broker's certificate is checked
	// against the name or IP the broker registered (ssl.endpoint.identification.algorithm).
	TLS *tls.Config
	// SASL is the mechanism for SASL_PLAINTEXT and SASL_SSL (franz-go's pkg/sasl).
	SASL sasl.Mechanism
	// Timeout bounds the whole dial: TCP connect, TLS handshake, ApiVersions and SASL.
	// Zero leaves it to ctx.
	Timeout time.Duration

	// swapped replaces SASL once SetSASL ran: the dialer is shared by many components, so
	// a dynamic change of the inter-broker mechanism must be safe against concurrent dials.
	swapped atomic.Pointer[mechanismBox]
}

// mechanismBox holds an interface value for atomic.Pointer.
type mechanismBox struct{ m sasl.Mechanism }

// SetSASL makes connections dialed from now on authenticate with m (nil: no SASL); open
// connections keep theirs.
func (d *Dialer) SetSASL(m sasl.Mechanism) { d.swapped.Store(&mechanismBox{m}) }

// Mechanism is the SASL mechanism a dial now uses.
func (d *Dialer) Mechanism() sasl.Mechanism {
	if d == nil {
		return nil
	}
	if b := d.swapped.Load(); b != nil {
		return b.m
	}
	return d.SASL
}

// Dial connects to addr, completes TLS, negotiates API versions and authenticates with
// SASL, in the order of Kafka's SaslClientAuthenticator: ApiVersions, SaslHandshake,
// then SaslAuthenticate rounds until the mechanism is done.
func (d *Dialer) Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	return d.DialReceiveBuffer(ctx, addr, clientID, -1)
}

// DialReceiveBuffer is Dial with the socket's receive buffer set to recvBuf bytes before it
// connects (replica.socket.receive.buffer.bytes for a follower's fetch connections); ≤ 0
// (Kafka's -1) leaves the OS default.
func (d *Dialer) DialReceiveBuffer(ctx context.Context, addr, clientID string, recvBuf int) (*Conn, error) {
	if d != nil && d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	nd := net.Dialer{Control: sockopt.Control(0, recvBuf)}
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kclient: dial %s: %w", addr, err)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("kclient: dial %s: %w", addr, err)
	}
	if d != nil && d.TLS != nil {
		cfg := d.TLS
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("kclient: TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := &Conn{
		addr: addr,
		fmt:  kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		conn: nc,
		host: host,
	}
	if err := c.negotiate(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	if mech := d.Mechanism(); mech != nil {
		c.mu.Lock()
		c.mech = mech
		err := c.authenticate(ctx)
		c.mu.Unlock()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("kclient: %s: %w", addr, err)
		}
	}
	return c, nil
}

// authenticate runs one SASL exchange over SaslHandshake v1 and SaslAuthenticate (KIP-152),
// at connection start and again for re-authentication (KIP-368). c.mu held.
func (c *Conn) authenticate(ctx context.Context) error {
	name := c.mech.Name()
	hs, ok := c.versions[kmsg.SASLHandshake.Int16()]
	if !ok || hs.Max < 1 {
		return fmt.Errorf("%w: broker does not serve SaslHandshake v1", ErrAuthentication)
	}
	av, ok := c.versions[kmsg.SASLAuthenticate.Int16()]
	if !ok {
		return fmt.Errorf("%w: broker does not serve SaslAuthenticate", ErrAuthentication)
	}
	hreq := kmsg.NewPtrSASLHandshakeRequest()
	hreq.SetVersion(min(hs.Max, hreq.MaxVersion()))
	hreq.Mechanism = name
	body, err := c.roundTrip(ctx, hreq)
	if err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.SetVersion(hreq.GetVersion())
	if err := hresp.ReadFrom(body); err != nil {
		return c.fail(fmt.Errorf("decode SaslHandshake response: %w", err))
	}
	if err := kerr.ErrorForCode(hresp.ErrorCode); err != nil {
		return fmt.Errorf("%w: mechanism %s: %w (broker enables %v)", ErrAuthentication, name, err, hresp.SupportedMechanisms)
	}

	session, out, err := c.mech.Authenticate(ctx, c.host)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAuthentication, name, err)
	}
	if len(out) == 0 {
		return fmt.Errorf("%w: %s: the mechanism has no first message", ErrAuthentication, name)
	}
	var lifetimeMs int64
	sent := time.Now()
	// As franz-go's client: continue until the mechanism is done and its last message (if
	// any) is sent; every SaslAuthenticate has a response.
	for done := false; !done || len(out) > 0; {
		areq := kmsg.NewPtrSASLAuthenticateRequest()
		areq.SetVersion(min(av.Max, areq.MaxVersion()))
		areq.SASLAuthBytes = out
		sent = time.Now()
		body, err := c.roundTrip(ctx, areq)
		if err != nil {
			return fmt.Errorf("SaslAuthenticate: %w", err)
		}
		aresp := kmsg.NewPtrSASLAuthenticateResponse()
		aresp.SetVersion(areq.GetVersion())
		if err := aresp.ReadFrom(body); err != nil {
			return c.fail(fmt.Errorf("decode SaslAuthenticate response: %w", err))
		}
		if err := kerr.ErrorForCode(aresp.ErrorCode); err != nil {
			msg := ""
			if aresp.ErrorMessage != nil {
				msg = ": " + *aresp.ErrorMessage
			}
			return fmt.Errorf("%w: %s: %w%s", ErrAuthentication, name, err, msg)
		}
		lifetimeMs = aresp.SessionLifetimeMillis
		out = nil
		if !done {
			if done, out, err = session.Challenge(aresp.SASLAuthBytes); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrAuthentication, name, err)
			}
		}
	}
	c.reauthAt = time.Time{}
	if lifetimeMs > 0 {
		// SaslClientAuthenticator re-authenticates at 85% of the session plus up to 10%
		// jitter, counted from when the last request was sent.
		const maxLifetimeMs = int64(365 * 24 * time.Hour / time.Millisecond)
		lifetime := time.Duration(min(lifetimeMs, maxLifetimeMs)) * time.Millisecond
		c.reauthAt = sent.Add(time.Duration(float64(lifetime) * (0.85 + 0.1*rand.Float64())))
	}
	return nil
}
