package chaos

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP proxy in front of one address (a broker's listener, or ZooKeeper for one
// broker). Faults cut it: connections a block matches are closed at once, and new ones it
// matches are closed as soon as they are accepted, until the block is lifted. The peers see
// what a network failure or a firewall reset looks like; neither has a back door.
type Proxy struct {
	ln      net.Listener
	targets []string // tried in order, like a client's server list

	mu     sync.Mutex
	conns  map[*proxyConn]struct{}
	blocks map[string]func(net.Conn) bool
	closed bool
	wg     sync.WaitGroup
}

// proxyConn is one forwarded connection; server is set (under Proxy.mu) once dialled.
type proxyConn struct {
	client, server net.Conn
}

// close ends both sides; the caller holds Proxy.mu.
func (pc *proxyConn) close() {
	pc.client.Close()
	if pc.server != nil {
		pc.server.Close()
	}
}

// NewProxy listens on listen (e.g. "127.0.0.1:0") and forwards every connection to the first
// of targets that accepts it.
func NewProxy(listen string, targets ...string) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, errors.New("proxy: no target")
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, targets: targets, conns: map[*proxyConn]struct{}{}, blocks: map[string]func(net.Conn) bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection and refuses new ones until Heal.
func (p *Proxy) Cut() { p.Block("all", func(net.Conn) bool { return true }) }

// Heal lifts every block.
func (p *Proxy) Heal() {
	p.mu.Lock()
	clear(p.blocks)
	p.mu.Unlock()
}

// Block closes the connections match selects (it gets the client side) and keeps closing new
// ones it selects until Unblock(name) or Heal.
func (p *Proxy) Block(name string, match func(client net.Conn) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocks[name] = match
	for pc := range p.conns {
		if match(pc.client) {
			pc.close()
		}
	}
}

// Unblock lifts one block.
func (p *Proxy) Unblock(name string) {
	p.mu.Lock()
	delete(p.blocks, name)
	p.mu.Unlock()
}

// Conns is the number of connections being forwarded.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for pc := range p.conns {
		pc.close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) blocked(c net.Conn) bool {
	for _, match := range p.blocks {
		if match(c) {
			return true
		}
	}
	return false
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	pc := &proxyConn{client: c}
	p.mu.Lock()
	if p.closed || p.blocked(c) {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, pc)
		pc.close()
		p.mu.Unlock()
	}()
	var server net.Conn
	for _, t := range p.targets {
		var err error
		if server, err = net.DialTimeout("tcp", t, 5*time.Second); err == nil {
			break
		}
	}
	if server == nil {
		return
	}
	p.mu.Lock()
	// A block may have come while dialling: it could not see this connection's server side.
	pc.server = server
	if p.closed || p.blocked(c) {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, c)
	go pipe(c, server)
	<-done // one direction ended: end both, as a reset would
}
