package broker

// debug.go serves net/http/pprof on the optional samsa.debug.listener (host:port; empty =
// off), so an operator can profile a running broker (go tool pprof
// http://HOST:PORT/debug/pprof/profile). Kafka has no counterpart (it exposes JMX); the
// listener is owned by the Broker: started first in Start, closed last in Shutdown.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/sirupsen/logrus"
)

// debugServer is one HTTP listener (pprof here, /metrics in http_listener.go). Close stops it and waits for Serve.
type debugServer struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// startDebugServer listens on addr and serves pprof until Close.
func startDebugServer(addr string, log *logrus.Entry) (*debugServer, error) {
	mux := http.NewServeMux() // not http.DefaultServeMux: nothing else registers here
	addPprof(mux)
	return startHTTPServer(addr, "samsa.debug.listener", "debug.listener", mux, log)
}

// addPprof mounts net/http/pprof's handlers under /debug/pprof/.
func addPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// startHTTPServer listens on addr (the value of setting key) and serves h until Close.
func startHTTPServer(addr, key, component string, h http.Handler, log *logrus.Entry) (*debugServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", key, addr, err)
	}
	d := &debugServer{
		ln:   ln,
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	log = log.WithFields(logrus.Fields{"component": component, "addr": ln.Addr().String()})
	go func() {
		defer close(d.done)
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Warn("HTTP listener stopped")
		}
	}()
	log.Info("serving HTTP")
	return d, nil
}

// Addr is the bound address (useful with port 0).
func (d *debugServer) Addr() string { return d.ln.Addr().String() }

// Close closes the listener and open connections (a running CPU profile is cut short)
// and waits for the server goroutine.
func (d *debugServer) Close() {
	d.srv.Close()
	<-d.done
}

// DebugAddr is the bound samsa.debug.listener address, "" when it is off.
func (b *Broker) DebugAddr() string {
	if b.debug == nil {
		return ""
	}
	return b.debug.Addr()
}
