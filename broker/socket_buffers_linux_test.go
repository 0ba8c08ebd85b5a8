package broker

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/sockopt"
)

func sockBufs(t *testing.T, c syscall.Conn) (snd, rcv int) {
	t.Helper()
	snd, rcv, err := sockopt.Buffers(c)
	if err != nil {
		t.Fatal(err)
	}
	return snd, rcv
}

// socket.receive.buffer.bytes is set on the listening socket and socket.send.buffer.bytes
// on each accepted connection, as Kafka's Acceptor does (Linux reports twice the size set);
// -1 leaves the OS defaults.
func TestSocketBufferSettings(t *testing.T) {
	cfg := &config.Config{Props: map[string]string{"socket.receive.buffer.bytes": "49152", "socket.send.buffer.bytes": "40960"}}
	bl, err := bindListener(config.Listener{Name: "PLAINTEXT", Host: "127.0.0.1"}, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.ln.Close()
	if _, r := sockBufs(t, bl.ln.(*net.TCPListener)); r != 2*49152 {
		t.Errorf("listener SO_RCVBUF %d, want %d", r, 2*49152)
	}
	def, err := bindListener(config.Listener{Name: "PLAINTEXT", Host: "127.0.0.1"}, nil,
		&config.Config{Props: map[string]string{"socket.receive.buffer.bytes": "-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer def.ln.Close()
	if _, r := sockBufs(t, def.ln.(*net.TCPListener)); r == 2*49152 {
		t.Errorf("listener with -1 has SO_RCVBUF %d: want the OS default", r)
	}

	e := newDataEnv(t)
	s := e.serve(func(s *SocketServer) { s.SendBufferBytes = 40960 })
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var served net.Conn
	for deadline := time.Now().Add(5 * time.Second); served == nil && time.Now().Before(deadline); {
		s.mu.Lock()
		for sc := range s.conns {
			served = sc
		}
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	if served == nil {
		t.Fatal("connection not accepted")
	}
	if snd, _ := sockBufs(t, served.(*net.TCPConn)); snd != 2*40960 {
		t.Errorf("accepted connection SO_SNDBUF %d, want %d", snd, 2*40960)
	}
}
