// Package kclient is a small Kafka-protocol client for broker-to-broker calls (Kafka's
// NetworkClient as used by the ControllerChannelManager and the replica fetcher).
//
// A Conn is one TCP connection with one request in flight at a time, as Kafka's
// inter-broker clients use it. At dial it sends ApiVersions once and afterwards
// sends every request at min(our max, the broker's max) for its key.
//
// Frames on the wire (Kafka's protocol guide):
//
//	request:  int32 size | int16 key | int16 version | int32 correlation id | nullable string client id
//	          | tagged fields (flexible versions only) | body
//	response: int32 size | int32 correlation id | tagged fields (flexible versions, except ApiVersions
//	          whose response header is always v0) | body
//
// A Dialer (dialer.go) secures the connection as the inter-broker listener is: TLS, then
// SASL over SaslHandshake v1 and SaslAuthenticate, re-authenticating before the session the
// broker granted runs out (KIP-368). Dial is the plain-TCP Dialer.
//
// Concurrency: a Conn is safe for concurrent use; requests are serialized.
package kclient

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Errors returned by Conn.
var (
	ErrClosed             = errors.New("kclient: connection closed")
	ErrUnsupportedRequest = errors.New("kclient: request not supported by broker")
	ErrCorrelation        = errors.New("kclient: correlation id mismatch")
)

// maxResponseBytes bounds a response frame so a corrupt size cannot make us allocate
// gigabytes; 100 MiB is Kafka's default socket.request.max.bytes.
const maxResponseBytes = 100 << 20

// apiVersionsMax is the ApiVersions version sent first: Kafka 3.7's maximum. A broker that
// does not support it answers with a v0 body and UNSUPPORTED_VERSION listing its range (KIP-511).
const apiVersionsMax = 3

// VersionRange is a broker's supported versions of one API key.
type VersionRange struct{ Min, Max int16 }

// Conn is one connection to a Kafka broker.
type Conn struct {
	addr string
	fmt  *kmsg.RequestFormatter

	closed atomic.Bool // set by Close, which may run while a request holds mu

	mu       sync.Mutex // serializes requests; guards the fields below
	conn     net.Conn
	corrID   int32
	broken   error
	versions map[int16]VersionRange

	// SASL (dialer.go): the mechanism to re-authenticate with and when (KIP-368); zero
	// reauthAt means the broker set no session lifetime.
	mech     sasl.Mechanism
	host     string
	reauthAt time.Time
}

// Dial connects to addr over plain TCP, negotiates API versions and returns a ready Conn.
func Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	return (*Dialer)(nil).Dial(ctx, addr, clientID)
}

// negotiate sends ApiVersions at apiVersionsMax, falling back to the version the broker
// says it supports when it answers UNSUPPORTED_VERSION.
func (c *Conn) negotiate(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	version := int16(apiVersionsMax)
	for attempt := 0; attempt < 2; attempt++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(version)
		req.ClientSoftwareName = "samsa"
		req.ClientSoftwareVersion = "3.7.0"
		body, err := c.roundTrip(ctx, req)
		if err != nil {
			return fmt.Errorf("kclient: api versions to %s: %w", c.addr, err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(version)
		perr := resp.ReadFrom(body)
		if perr != nil || resp.ErrorCode == kerr.UnsupportedVersion.Code {
			// The broker answered with a v0 body (KIP-511): read its ApiVersions range and retry.
			v0 := kmsg.NewPtrApiVersionsResponse()
			v0.SetVersion(0)
			if err := v0.ReadFrom(body); err != nil {
				if perr != nil {
					return fmt.Errorf("kclient: api versions from %s: %w", c.addr, perr)
				}
				return fmt.Errorf("kclient: api versions from %s: %w", c.addr, err)
			}
			next := int16(-1)
			for _, k := range v0.ApiKeys {
				if k.ApiKey == 18 {
					next = min(k.MaxVersion, version-1)
				}
			}
			if next < 0 || attempt == 1 {
				return fmt.Errorf("kclient: api versions from %s: %w", c.addr, kerr.UnsupportedVersion)
			}
			version = next
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("kclient: api versions from %s: %w", c.addr, err)
		}
		c.versions = make(map[int16]VersionRange, len(resp.ApiKeys))
		for _, k := range resp.ApiKeys {
			c.versions[k.ApiKey] = VersionRange{Min: k.MinVersion, Max: k.MaxVersion}
		}
		return nil
	}
	return fmt.Errorf("kclient: api versions from %s: %w", c.addr, kerr.UnsupportedVersion)
}

// Addr is the address this Conn was dialed with.
func (c *Conn) Addr() string { return c.addr }

// Versions returns the broker's range for an API key, as learned at dial.
func (c *Conn) Versions(key int16) (VersionRange, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.versions[key]
	return r, ok
}

// Request sends req at min(req.MaxVersion(), the broker's max for its key) and returns
// the decoded response. A transport error or cancelled context breaks the Conn: later
// requests fail and the caller should dial again. On a SASL connection whose session is
// about to expire, the Conn re-authenticates first (KIP-368), as Kafka's clients do.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.broken != nil {
		return nil, c.broken
	}
	if c.mech != nil && !c.reauthAt.IsZero() && !time.Now().Before(c.reauthAt) {
		if err := c.authenticate(ctx); err != nil {
			// The broker closes a connection whose session expired; so do we.
			return nil, c.fail(fmt.Errorf("kclient: re-authenticate to %s: %w", c.addr, err))
		}
	}
	return c.request(ctx, req)
}

// request is Request without the checks; c.mu held.
func (c *Conn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	r, ok := c.versions[req.Key()]
	if !ok || r.Min > req.MaxVersion() {
		return nil, fmt.Errorf("kclient: %s key %d: %w", c.addr, req.Key(), ErrUnsupportedRequest)
	}
	req.SetVersion(min(req.MaxVersion(), r.Max))
	body, err := c.roundTrip(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("kclient: %s key %d v%d: %w", c.addr, req.Key(), req.GetVersion(), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("kclient: decode %s key %d v%d response: %w", c.addr, req.Key(), req.GetVersion(), err)
	}
	return resp, nil
}

// roundTrip writes one request and reads its response body (header stripped). c.mu held.
func (c *Conn) roundTrip(ctx context.Context, req kmsg.Request) ([]byte, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	c.corrID++
	corr := c.corrID
	frame := c.fmt.AppendRequest(nil, req, corr)

	// ctx's end (deadline or cancel) interrupts the blocked I/O through a past deadline;
	// ctx.Err() is set by then, so callers see context errors.
	if err := c.conn.SetDeadline(time.Time{}); err != nil {
		return nil, c.fail(err)
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if _, err := c.conn.Write(frame); err != nil {
		return nil, c.fail(ctxErr(ctx, err))
	}
	var sizeBuf [4]byte
	if _, err := io.ReadFull(c.conn, sizeBuf[:]); err != nil {
		return nil, c.fail(ctxErr(ctx, err))
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 4 || size > maxResponseBytes {
		return nil, c.fail(fmt.Errorf("kclient: invalid response size %d", size))
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(c.conn, buf); err != nil {
		return nil, c.fail(ctxErr(ctx, err))
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, c.fail(fmt.Errorf("%w: got %d, want %d", ErrCorrelation, got, corr))
	}
	buf = buf[4:]
	// Response header v1 (tagged fields) for flexible versions, except ApiVersions (always v0).
	if req.IsFlexible() && req.Key() != 18 {
		rest, err := skipTags(buf)
		if err != nil {
			return nil, c.fail(err)
		}
		buf = rest
	}
	return buf, nil
}

func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// fail marks the Conn broken (the stream position is unknown) and closes it.
func (c *Conn) fail(err error) error {
	c.broken = fmt.Errorf("%w: %w", ErrClosed, err)
	c.conn.Close()
	return err
}

// skipTags skips a tagged-field section: uvarint count, then (uvarint tag, uvarint size, bytes)*.
func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("kclient: bad tagged fields in response header")
	}
	b = b[l:]
	for i := uint64(0); i < n; i++ {
		if _, l = binary.Uvarint(b); l <= 0 {
			return nil, errors.New("kclient: bad tag in response header")
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || uint64(len(b)-l) < size {
			return nil, errors.New("kclient: bad tag size in response header")
		}
		b = b[l+int(size):]
	}
	return b, nil
}

// Close closes the connection, interrupting a request in flight. Safe to call more than once.
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.conn.Close()
}
