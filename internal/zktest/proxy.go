package zktest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a ZooKeeper, for tests that need a client to lose its
// connection without closing its session: Partition drops every proxied connection and
// refuses new ones (the client cannot reach the server, the server hears no pings, so the
// session expires after its timeout, as with a crashed or SIGSTOPped broker); Heal lets the
// client reconnect, and it learns then whether its session survived.
type Proxy struct {
	l      net.Listener
	target string

	mu          sync.Mutex
	partitioned bool
	conns       map[net.Conn]struct{}
	closed      bool
	wg          sync.WaitGroup
}

// StartProxy proxies 127.0.0.1:<free port> to target; closed in t.Cleanup.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zktest: proxy listen: %v", err)
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Connect is like Server.Connect, through the proxy.
func (p *Proxy) Connect(chroot string) string {
	chroot = strings.Trim(chroot, "/")
	if chroot == "" {
		return p.Addr()
	}
	return p.Addr() + "/" + chroot
}

// Partition closes all proxied connections and refuses new ones until Heal.
func (p *Proxy) Partition() {
	p.mu.Lock()
	p.partitioned = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Heal accepts connections again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.partitioned = false
	p.mu.Unlock()
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.l.Close()
	p.Partition()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.partitioned || p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.partitioned || p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.conns[up] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	// Either side ending ends both: the client sees the connection drop.
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
