// Package kafkatest serves the Kafka wire protocol for tests where kfake does not fit: a
// listener on 127.0.0.1 that reads size-prefixed request frames (request header v1 or v2),
// decodes each body with kmsg and writes back whatever a test's Handler answers, under the
// request's correlation id. It plays a controller's peer brokers, or a broker that answers
// a client in ways a real one would not.
//
// Response headers follow the request's flexibility (header v1 with an empty tag section,
// or header v0), except ApiVersions, whose response header is always v0 (KIP-511).
package kafkatest

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler answers one request. req is decoded at version; an ApiVersions request whose body
// does not decode (a version kmsg does not know) is still passed on, as a broker answers
// it with UNSUPPORTED_VERSION (KIP-511). A nil response: the request gets no answer and
// the connection stays open. Handlers run on the connections' goroutines, one request at a
// time per connection; the response's version is the handler's to set.
type Handler func(key, version int16, req kmsg.Request) kmsg.Response

// Server is a running fake broker. It stops, closing every connection, when the test ends.
type Server struct {
	ln           net.Listener
	handle       Handler
	responseTags bool

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// Option changes how a Server answers.
type Option func(*Server)

// WithResponseTags puts one unknown tagged field (tag 7, 2 bytes) into every flexible
// response header, which a client must skip.
func WithResponseTags() Option { return func(s *Server) { s.responseTags = true } }

// NewServer listens on a free 127.0.0.1 port and serves every connection with handle.
func NewServer(t testing.TB, handle Handler, opts ...Option) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("kafkatest: listen: %v", err)
	}
	s := &Server{ln: ln, handle: handle}
	for _, o := range opts {
		o(s)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, nc)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(nc) }()
		}
	}()
	t.Cleanup(s.close)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Port is the server's port, as a broker registration carries it.
func (s *Server) Port() int32 { return int32(s.ln.Addr().(*net.TCPAddr).Port) }

func (s *Server) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serve reads requests from nc and answers them in order until nc fails or closes.
func (s *Server) serve(nc net.Conn) {
	const apiVersionsKey = 18
	for {
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return
		}
		buf := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(nc, buf); err != nil || len(buf) < 10 {
			return
		}
		// Request header: api key, api version, correlation id, nullable client id, and
		// (flexible versions) a tag section our clients leave empty.
		key := int16(binary.BigEndian.Uint16(buf))
		version := int16(binary.BigEndian.Uint16(buf[2:]))
		corr := buf[4:8]
		body := buf[10:]
		if idLen := int16(binary.BigEndian.Uint16(buf[8:])); idLen > 0 {
			body = body[idLen:]
		}
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		req.SetVersion(version)
		if req.IsFlexible() {
			body = body[1:]
		}
		var resp kmsg.Response
		if err := req.ReadFrom(body); err == nil || key == apiVersionsKey {
			resp = s.handle(key, version, req)
		}
		if resp == nil {
			continue
		}
		out := append([]byte{0, 0, 0, 0}, corr...)
		if resp.IsFlexible() && key != apiVersionsKey {
			if s.responseTags {
				out = append(out, 1, 7, 2, 0xAA, 0xBB) // one tag: 7, 2 bytes
			} else {
				out = append(out, 0)
			}
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}
