package sockopt

import (
	"context"
	"net"
	"syscall"
	"testing"
)

func bufs(t *testing.T, c syscall.Conn) (snd, rcv int) {
	t.Helper()
	snd, rcv, err := Buffers(c)
	if err != nil {
		t.Fatal(err)
	}
	return snd, rcv
}

// A receive buffer set on the listening socket is inherited by accepted connections, and
// one set on a dialer is on the connection; -1 leaves the defaults.
func TestControlSetsBuffers(t *testing.T) {
	const recv, send = 48 << 10, 40 << 10
	lc := net.ListenConfig{Control: Control(0, recv)}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, r := bufs(t, ln.(*net.TCPListener)); r != 2*recv {
		t.Errorf("listener SO_RCVBUF %d, want %d", r, 2*recv)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	d := net.Dialer{Control: Control(send, recv)}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s, r := bufs(t, c.(*net.TCPConn)); s != 2*send || r != 2*recv {
		t.Errorf("dialed SO_SNDBUF/SO_RCVBUF %d/%d, want %d/%d", s, r, 2*send, 2*recv)
	}
	sc, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer sc.Close()
	if _, r := bufs(t, sc.(*net.TCPConn)); r != 2*recv {
		t.Errorf("accepted SO_RCVBUF %d, want %d inherited from the listener", r, 2*recv)
	}

	if Control(-1, -1) != nil {
		t.Error("Control(-1, -1) is not nil: -1 must leave the OS defaults")
	}
	var plain net.Dialer
	pc, err := plain.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if s, r := bufs(t, pc.(*net.TCPConn)); s == 2*send || r == 2*recv {
		t.Errorf("a default socket has the set sizes %d/%d: the test proves nothing", s, r)
	}
}
