package broker

// conn.go mirrors kafka.network.SocketServer (one Acceptor and its Processors) with Go's
// model: one goroutine per connection reads a frame, decodes it with kmsg, hands it to the
// Handler, writes the response, and only then reads the next frame. That is Kafka's
// "channel muted while a request is in flight": responses stay in request order.
//
// Frame:            int32 size | size bytes
// Request header:   v0: int16 api_key | int16 api_version | int32 correlation_id
//                   v1: v0 | nullable_string client_id (int16 length)
//                   v2: v1 | tagged fields (flexible request versions)
// Response header:  v0: int32 correlation_id
//                   v1: v0 | tagged fields (flexible versions, except ApiVersions: always v0)
//
// Bad input never crashes the broker and never logs at Error: an oversized or negative size,
// an unknown API key, an unsupported version (other than ApiVersions, answered with
// UNSUPPORTED_VERSION at v0 as Kafka does) or a body kmsg cannot decode closes the
// connection with a rate-limited Warn line, as Kafka's Processor does on
// InvalidRequestException.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors from request decoding; the connection is closed on any of them.
var (
	errFrameSize      = errors.New("broker: invalid request size")
	errUnknownAPIKey  = errors.New("broker: unknown API key")
	errUnsupportedVer = errors.New("broker: unsupported API version")
	errMalformed      = errors.New("broker: malformed request")
)

// requestHeader is a parsed request header.
type requestHeader struct {
	key, version  int16
	correlationID int32
	clientID      *string
	headerVersion int16
}

// minRequestHeaderSize is api_key + api_version + correlation_id.
const minRequestHeaderSize = 8

// parseRequest decodes one frame body (without the size prefix) into its header and
// request. For a known key with a version outside the served range it returns the header
// and errUnsupportedVer, so the caller can answer ApiVersions; for anything else that is not
// a well-formed request it returns an error and the caller closes the connection. It never
// panics, whatever body holds (FuzzRequestDecode).
func parseRequest(body []byte) (requestHeader, kmsg.Request, error) {
	return parseRequestReusing(body, nil)
}

// parseRequestReusing is parseRequest for a connection whose previous request carried
// client id prevClientID: a header with the same client id returns that pointer instead of
// a new string, as clients send the same id on every request of a connection.
func parseRequestReusing(body []byte, prevClientID *string) (requestHeader, kmsg.Request, error) {
	var h requestHeader
	if len(body) < minRequestHeaderSize {
		return h, nil, fmt.Errorf("%w: %d-byte request header", errMalformed, len(body))
	}
	h.key = int16(binary.BigEndian.Uint16(body[0:]))
	h.version = int16(binary.BigEndian.Uint16(body[2:]))
	h.correlationID = int32(binary.BigEndian.Uint32(body[4:]))

	req := kmsg.RequestForKey(h.key)
	minV, maxV, served := SupportedVersions(h.key)
	if req == nil || !served {
		return h, nil, fmt.Errorf("%w %d", errUnknownAPIKey, h.key)
	}
	if h.version < minV || h.version > maxV {
		return h, nil, fmt.Errorf("%w: %s v%d (serving v%d-v%d)", errUnsupportedVer, kmsg.NameForKey(h.key), h.version, minV, maxV)
	}
	req.SetVersion(h.version)

	r := kbin.Reader{Src: body[minRequestHeaderSize:]}
	h.headerVersion = 1
	if h.key == 7 && h.version == 0 { // ControlledShutdown v0 has no client id
		h.headerVersion = 0
	} else {
		h.clientID = readClientID(&r, prevClientID)
		if req.IsFlexible() {
			h.headerVersion = 2
			skipTags(&r)
		}
	}
	if err := r.Complete(); err != nil {
		return h, nil, fmt.Errorf("%w: %s v%d header: %v", errMalformed, kmsg.NameForKey(h.key), h.version, err)
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return h, nil, fmt.Errorf("%w: %s v%d body: %v", errMalformed, kmsg.NameForKey(h.key), h.version, err)
	}
	return h, req, nil
}

// readClientID reads the header's nullable client id (kbin.Reader.NullableString), returning
// prev when it holds the same string.
func readClientID(r *kbin.Reader, prev *string) *string {
	l := r.Int16()
	if l < 0 {
		return nil
	}
	b := r.Span(int(l))
	if prev != nil && *prev == string(b) { // the comparison does not allocate
		return prev
	}
	s := string(b)
	return &s
}

// skipTags is kmsg.SkipTags on a concrete reader: kmsg's takes an interface, which moves
// the caller's reader to the heap on every flexible request.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		_, size := r.Uvarint(), r.Uvarint()
		r.Span(int(size))
	}
}

// appendResponse appends a full response frame (size, header, body) to dst.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != 18 { // ApiVersions always uses response header v0
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// SocketServer accepts connections on one listener and serves them. Serve owns every
// connection goroutine and waits for them before it returns; Close stops it.
type SocketServer struct {
	// ConnectionsMaxIdle is connections.max.idle.ms: a connection that neither sends a
	// request nor accepts response bytes for this long is closed. 0 means Kafka's 10 min.
	// Set before Serve.
	ConnectionsMaxIdle time.Duration
	// CopyFetchRecords turns zero-copy fetch off: record bytes are pread into the
	// response instead of sent with sendfile. Set before Serve.
	CopyFetchRecords bool
	// Security is the listener's security protocol and what it needs (conn_security.go);
	// nil is PLAINTEXT. On SSL and SASL_SSL listeners record bytes are always copied, as
	// sendfile cannot write through TLS. Set before Serve.
	Security *ListenerSecurity
	// Quotas are the broker's connection limits (conn_quotas.go), shared by its listeners;
	// nil accepts every connection. Set before Serve.
	Quotas *ConnectionQuotas
	// SendBufferBytes is socket.send.buffer.bytes, set on each accepted connection as
	// Kafka's Acceptor does; ≤ 0 (Kafka's -1) leaves the OS default. Set before Serve.
	SendBufferBytes int

	l               net.Listener
	listenerName    string
	h               Handler
	maxRequestBytes int32
	log             *logrus.Entry
	limiter         logLimiter

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	// accepted orders the counted connections by acceptance, for closeOldest.
	accepted    map[net.Conn]uint64
	acceptedSeq uint64
	cancel      context.CancelFunc
	done        chan struct{} // closed when Serve returns; nil until Serve starts
}

// NewSocketServer serves h on l. listenerName is the listener's name (PLAINTEXT...), which
// Metadata uses to pick endpoints. maxRequestBytes is socket.request.max.bytes.
func NewSocketServer(l net.Listener, listenerName string, h Handler, maxRequestBytes int32, log *logrus.Entry) *SocketServer {
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	return &SocketServer{
		l: l, listenerName: listenerName, h: h, maxRequestBytes: maxRequestBytes,
		log:   log.WithFields(logrus.Fields{"component": "socket.server", "listener": listenerName}),
		conns: map[net.Conn]struct{}{}, accepted: map[net.Conn]uint64{},
	}
}

// Addr is the bound address (useful with port 0).
func (s *SocketServer) Addr() net.Addr { return s.l.Addr() }

// Serve accepts connections until ctx is done or Close is called, then closes every
// connection and waits for their goroutines. It returns nil on a requested stop.
func (s *SocketServer) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	if s.closed || s.done != nil {
		s.mu.Unlock()
		cancel()
		return errors.New("broker: socket server closed or already serving")
	}
	if err := s.Security.Validate(); err != nil {
		s.mu.Unlock()
		cancel()
		return fmt.Errorf("broker: listener %s: %w", s.listenerName, err)
	}
	s.cancel = cancel
	s.done = make(chan struct{})
	s.mu.Unlock()
	defer close(s.done)

	var wg sync.WaitGroup
	defer func() {
		cancel()
		s.mu.Lock()
		s.closed = true
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		wg.Wait()
	}()
	if s.Quotas != nil {
		s.Quotas.register(s.listenerName, s.closeOldest)
	}
	wg.Add(1)
	go func() { // unblock Accept on ctx done; exits when Serve's defer cancels
		defer wg.Done()
		<-ctx.Done()
		s.l.Close()
	}()

	var backoff time.Duration
	for {
		c, err := s.l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// e.g. EMFILE: back off like net/http instead of spinning
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.WithError(err).Warn("accept failed")
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		if tc, ok := c.(*net.TCPConn); ok && s.SendBufferBytes > 0 {
			if err := tc.SetWriteBuffer(s.SendBufferBytes); err != nil {
				s.log.WithError(err).Debug("socket.send.buffer.bytes not applied")
			}
		}
		ip := remoteIP(c.RemoteAddr())
		if !s.admit(ctx, c, ip) {
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			if s.Quotas != nil {
				s.Quotas.Dec(s.listenerName, ip)
			}
			return nil
		}
		s.conns[c] = struct{}{}
		s.acceptedSeq++
		s.accepted[c] = s.acceptedSeq
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(ctx, c)
			s.mu.Lock()
			delete(s.conns, c)
			delete(s.accepted, c)
			s.mu.Unlock()
			c.Close()
			if s.Quotas != nil {
				s.Quotas.Dec(s.listenerName, ip)
			}
		}()
	}
}

// admit applies the connection quotas to an accepted connection, as Kafka's Acceptor.accept:
// it may wait for a slot or for the creation rate; a connection from an address over its
// limit is closed at once, one over its address's creation rate is closed after its throttle
// time without being served. It reports whether c is to be served (and is counted).
func (s *SocketServer) admit(ctx context.Context, c net.Conn, ip string) bool {
	if s.Quotas == nil {
		return true
	}
	err := s.Quotas.Inc(ctx, s.listenerName, ip)
	if err == nil {
		return true
	}
	var throttled *connectionThrottledError
	switch {
	case errors.As(err, &throttled):
		s.log.WithFields(logrus.Fields{"ip": ip, "throttle_ms": throttled.throttle.Milliseconds()}).
			Debug("Delaying closing of connection: address over its connection creation rate")
		s.closeAfter(c, throttled.throttle)
	case errors.Is(err, ErrTooManyConnections):
		l := s.log.WithError(err).WithField("ip", ip)
		if s.limiter.allow(time.Now()) {
			l.Info("Rejected connection: address already has the configured maximum of connections")
		} else {
			l.Debug("Rejected connection: address already has the configured maximum of connections")
		}
		c.Close()
		s.Quotas.Dec(s.listenerName, ip)
	default: // stopping
		c.Close()
	}
	return false
}

// closeAfter holds a throttled connection open, unserved, for d and then closes it (Kafka's
// DelayedCloseSocket); Serve's shutdown closes it earlier.
func (s *SocketServer) closeAfter(c net.Conn, d time.Duration) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	time.AfterFunc(d, func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	})
}

// closeOldest closes up to n of the listener's oldest served connections, for a broker over
// max.connections (Processor.closeExcessConnections); each is counted down when its
// goroutine ends. It returns how many it closed.
func (s *SocketServer) closeOldest(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	type entry struct {
		c   net.Conn
		seq uint64
	}
	all := make([]entry, 0, len(s.accepted))
	for c, seq := range s.accepted {
		all = append(all, entry{c, seq})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	closed := 0
	for _, e := range all {
		if closed >= n {
			break
		}
		delete(s.accepted, e.c) // not chosen twice while its goroutine winds down
		e.c.Close()
		closed++
		s.log.WithField("remote", e.c.RemoteAddr().String()).Info("closing connection: broker over max.connections")
	}
	return closed
}

// Close stops accepting, closes every connection and waits for Serve to return.
func (s *SocketServer) Close() {
	s.mu.Lock()
	s.closed = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	s.l.Close()
	if cancel != nil {
		cancel()
		<-done
	}
}

// serveConn is one connection's loop: read, decode, handle, respond, repeat. On secured
// listeners the TLS handshake comes first and SASL frames are answered by the
// authenticator (conn_security.go) until the client has authenticated.
func (s *SocketServer) serveConn(ctx context.Context, raw net.Conn) {
	log := s.log.WithField("remote", raw.RemoteAddr().String())
	log.Debug("connection accepted")
	idle := s.ConnectionsMaxIdle
	if idle <= 0 {
		idle = 10 * time.Minute
	}
	c, sec, ok := s.secureConn(ctx, raw, idle, log)
	if !ok {
		return
	}
	auth := sec.auth
	ctx, rq := connRequestMetricsFor(ctx, s.h) // RequestMetrics (metrics_request.go); nil when off
	var (
		sizeBuf [4]byte
		reuse   []byte // last frame's buffer: requests do not outlive Handle
		large   []byte // last frame's buffer when above maxReusedFrame, pooled once done
		connLog = log
		lastCID *string
		zc      *zeroCopyFetch // nil unless plain TCP
	)
	if !s.CopyFetchRecords && !s.Security.usesTLS() {
		zc = zeroCopyFor(c)
	}
	var muteFor time.Duration // the previous request's throttle (KIP-219)
	for {
		if muteFor > 0 {
			// Kafka mutes a throttled channel after the response went out: no request is
			// read until the throttle time has passed.
			t := time.NewTimer(muteFor)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			muteFor = 0
		}
		if large != nil { // the previous request is done with its bytes
			putLargeFrame(large)
			large = nil
		}
		c.SetReadDeadline(time.Now().Add(idle))
		if _, err := io.ReadFull(c, sizeBuf[:]); err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				log.WithField("idle", idle).Debug("closing idle connection")
			case !errors.Is(err, io.EOF) && ctx.Err() == nil && !errors.Is(err, net.ErrClosed):
				log.WithError(err).Debug("connection read failed")
			}
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if auth != nil && !auth.complete() && (size < 0 || size > saslMaxReceiveSize) {
			s.failAuthentication(ctx, c, log, &authFailure{delayed: true,
				err: fmt.Errorf("Failing SASL authentication due to invalid receive size (%d bytes)", size)}, idle)
			return
		}
		if size < 0 || size > s.maxRequestBytes {
			s.badInput(log, fmt.Errorf("%w: %d bytes (socket.request.max.bytes=%d)", errFrameSize, size, s.maxRequestBytes))
			return
		}
		c.SetReadDeadline(time.Now().Add(idle))
		body, err := readBody(c, size, reuse)
		if err != nil {
			log.WithError(err).Debug("connection closed mid-request")
			return
		}
		if cap(body) <= maxReusedFrame {
			reuse = body
		} else {
			large = body
		}
		received := time.Now()

		principal := sec.principal
		if auth != nil {
			if auth.complete() && isSaslHandshake(body) {
				auth.maybeBeginReauth(received)
			}
			if !auth.complete() {
				reply, dispatch, f := auth.frame(body, received)
				if f != nil {
					s.failAuthentication(ctx, c, log, f, idle)
					return
				}
				if !dispatch {
					c.SetWriteDeadline(time.Now().Add(idle))
					if _, err := c.Write(reply); err != nil {
						log.WithError(err).Debug("SASL response write failed")
						return
					}
					if auth.complete() {
						log.WithFields(logrus.Fields{"principal": auth.principal.String(), "mechanism": auth.mechanism,
							"reauthentications": auth.reauths, "session_expiry": auth.expiry}).Debug("SASL authentication complete")
					}
					continue
				}
				// ApiVersions before authentication: served as usual, anonymously.
			} else if auth.expired(received) {
				log.Debug("closing connection: SASL session expired without re-authentication")
				return
			} else {
				principal = auth.principal
			}
		}

		h, req, err := parseRequestReusing(body, lastCID)
		if err != nil {
			if errors.Is(err, errUnsupportedVer) && h.key == 18 {
				// Kafka answers any ApiVersions version, so that a newer client learns ours.
				out := appendResponse(nil, h.correlationID, unsupportedApiVersionsResponse())
				c.SetWriteDeadline(time.Now().Add(idle))
				if _, err := c.Write(out); err != nil {
					return
				}
				continue
			}
			s.badInput(log.WithField("correlation_id", h.correlationID), err)
			return
		}

		if h.clientID != lastCID && (h.clientID == nil || lastCID == nil || *h.clientID != *lastCID) {
			lastCID = h.clientID
			connLog = log.WithField("client_id", clientIDString(h.clientID))
		}
		rc := &RequestContext{
			ClientID:      clientIDString(h.clientID),
			CorrelationID: h.correlationID,
			APIKey:        h.key,
			APIVersion:    h.version,
			HeaderVersion: h.headerVersion,
			RemoteAddr:    c.RemoteAddr(),
			ListenerName:  s.listenerName,
			Principal:     principal,
			Received:      received,
			Log:           connLog,
			Size:          size,
		}
		if h.key == 1 && zc != nil {
			zc.reset()
			rc.zeroCopy = zc
		}
		rq.begin(received)
		resp, err := s.handle(ctx, rc, req)
		rq.handled()
		muteFor = rc.muteFor
		if connLog.Logger.IsLevelEnabled(logrus.DebugLevel) { // skip building fields per request otherwise
			connLog.WithFields(logrus.Fields{"api": kmsg.NameForKey(h.key), "api_version": h.version,
				"correlation_id": h.correlationID, "elapsed": time.Since(received)}).Debug("request handled")
		}
		if err != nil {
			if ctx.Err() == nil { // a client can repeat this (acks=0 failures): rate-limited
				l := connLog.WithError(err).WithFields(logrus.Fields{"api": kmsg.NameForKey(h.key), "api_version": h.version})
				if s.limiter.allow(time.Now()) {
					l.Info("closing connection after request")
				} else {
					l.Debug("closing connection after request")
				}
			}
			rq.done(rc, req, nil)
			return
		}
		if resp == nil { // acks=0 produce
			rq.done(rc, req, nil)
			continue
		}
		if sr, ok := resp.(streamedResponse); ok { // Fetch v0-v3: converted while written (fetch_downconvert.go)
			c.SetWriteDeadline(time.Now().Add(idle))
			err := sr.writeFrame(c, h.correlationID)
			rq.done(rc, req, resp)
			if err != nil {
				connLog.WithError(err).Debug("response write failed")
				return
			}
			continue
		}
		if rc.zeroCopy != nil && len(rc.zeroCopy.parts) > 0 {
			c.SetWriteDeadline(time.Now().Add(idle))
			err := rc.zeroCopy.writeResponse(h.correlationID, resp)
			rc.zeroCopy.reset()
			rq.done(rc, req, resp)
			if err != nil {
				connLog.WithError(err).Debug("response write failed")
				return
			}
			continue
		}
		rb := getResponseBuffer()
		*rb = appendResponse((*rb)[:0], h.correlationID, resp)
		c.SetWriteDeadline(time.Now().Add(idle))
		_, err = c.Write(*rb)
		putResponseBuffer(rb) // shared, so an idle connection pins no response memory
		rq.done(rc, req, resp)
		if err != nil {
			connLog.WithError(err).Debug("response write failed")
			return
		}
	}
}

// Response buffers are shared through a pool: busy fetch connections reuse them instead of
// allocating megabytes per response, and idle connections hold none.
var responseBufs sync.Pool // of *[]byte

// getResponseBuffer returns a pooled buffer; putResponseBuffer gives it back. Passing the
// pointer through, rather than the slice, keeps a request/response round trip free of
// allocations for the buffer.
func getResponseBuffer() *[]byte {
	if p, ok := responseBufs.Get().(*[]byte); ok {
		*p = (*p)[:0]
		return p
	}
	return new([]byte)
}

func putResponseBuffer(p *[]byte) {
	if cap(*p) <= 64<<20 { // don't keep outliers
		*p = (*p)[:0]
		responseBufs.Put(p)
	}
}

// getResponseBuf and putResponseBuf are the slice form of the pool (one small allocation
// per put, for the pointer the pool holds).
func getResponseBuf() []byte { return *getResponseBuffer() }

func putResponseBuf(b []byte) { putResponseBuffer(&b) }

// handle calls the Handler and turns a panic (our bug, never the client's) into an Error
// log line and a closed connection, as Kafka's request handler catches what an API
// throws; the broker keeps serving everyone else.
func (s *SocketServer) handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (resp kmsg.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			rc.Log.WithFields(logrus.Fields{"api": kmsg.NameForKey(rc.APIKey), "api_version": rc.APIVersion,
				"panic": fmt.Sprint(r), "stack": string(debug.Stack())}).Error("request handler panicked")
			resp, err = nil, fmt.Errorf("broker: handler panic: %v", r)
		}
	}()
	return s.h.Handle(ctx, rc, req)
}

// maxReusedFrame bounds the per-connection request buffer kept between requests.
const maxReusedFrame = 1 << 20

// readBody reads a size-byte frame body into buf if it fits. Larger frames come from a
// pooled buffer of their power-of-two class when one is free; otherwise they grow as bytes
// arrive rather than being allocated up front, so a client that announces 100 MiB and sends
// 3 bytes costs little. Give large bodies back with putLargeFrame once the request is done.
func readBody(r io.Reader, size int32, buf []byte) ([]byte, error) {
	if int(size) <= cap(buf) {
		body := buf[:size]
		_, err := io.ReadFull(r, body)
		return body, err
	}
	if size <= maxReusedFrame {
		body := make([]byte, size)
		_, err := io.ReadFull(r, body)
		return body, err
	}
	class := bits.Len32(uint32(size - 1)) // 1<<class >= size
	if class < len(largeFrames) {
		if p, ok := largeFrames[class].Get().(*[]byte); ok {
			body := (*p)[:size]
			_, err := io.ReadFull(r, body)
			return body, err
		}
	}
	// Double from 1 MiB: the last step lands on exactly 1<<class, so the buffer can be
	// pooled afterwards.
	body := make([]byte, 0, maxReusedFrame)
	for len(body) < int(size) {
		if len(body) == cap(body) {
			grown := make([]byte, len(body), min(2*cap(body), 1<<class))
			copy(grown, body)
			body = grown
		}
		end := min(cap(body), int(size))
		n, err := io.ReadFull(r, body[len(body):end])
		body = body[:len(body)+n]
		if err != nil {
			return nil, err
		}
	}
	return body, nil
}

// largeFrames pools request buffers above maxReusedFrame by power-of-two class (index =
// log2 of the capacity), up to 128 MiB, above socket.request.max.bytes' default of 100 MiB.
// A producer whose requests carry many 1 MB batches then reuses buffers instead of growing
// and copying a new one per request, and idle connections hold none.
var largeFrames [28]sync.Pool // of *[]byte

// putLargeFrame returns a body from readBody to its pool; the request must be finished
// with it (its bytes alias the buffer).
func putLargeFrame(b []byte) {
	c := cap(b)
	if c <= maxReusedFrame || c&(c-1) != 0 {
		return
	}
	if class := bits.Len(uint(c)) - 1; class < len(largeFrames) {
		b = b[:0]
		largeFrames[class].Put(&b)
	}
}

func clientIDString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// badInput logs a client's protocol error: Warn for the first few per second per server,
// Debug after that, so a misbehaving client cannot flood the log.
func (s *SocketServer) badInput(log *logrus.Entry, err error) {
	if s.limiter.allow(time.Now()) {
		log.WithError(err).Warn("closing connection: bad request")
	} else {
		log.WithError(err).Debug("closing connection: bad request")
	}
}

// logLimiter allows a burst of logLimitBurst events per second.
type logLimiter struct {
	mu     sync.Mutex
	window time.Time
	n      int
}

const logLimitBurst = 10

func (l *logLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Second {
		l.window, l.n = now, 0
	}
	l.n++
	return l.n <= logLimitBurst
}
