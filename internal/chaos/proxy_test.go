package chaos

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line and reads it back; an error means the connection is cut.
func roundTrip(c net.Conn, r *bufio.Reader, s string) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintln(c, s); err != nil {
		return err
	}
	got, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if got != s+"\n" {
		return fmt.Errorf("got %q", got)
	}
	return nil
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func TestProxyCutAndHeal(t *testing.T) {
	// The first target refuses: the proxy falls back to the next, like a client's server list.
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	p, err := NewProxy("127.0.0.1:0", deadAddr, echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c1, r1 := dial(t, p.Addr())
	if err := roundTrip(c1, r1, "hello"); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if err := roundTrip(c1, r1, "after cut"); err == nil {
		t.Fatal("an open connection survived Cut")
	}
	c2, r2 := dial(t, p.Addr()) // accepted by the kernel, closed by the proxy
	if err := roundTrip(c2, r2, "new while cut"); err == nil {
		t.Fatal("a new connection got through while cut")
	}
	p.Heal()
	c3, r3 := dial(t, p.Addr())
	if err := roundTrip(c3, r3, "healed"); err != nil {
		t.Fatalf("after Heal: %v", err)
	}
}

// TestProxyBlockByOwner: a block that matches by the client socket's owning process (found
// through /proc) closes that process's connections and no other; this test's process owns
// them all, so a block for another pid must leave them alone.
func TestProxyBlockByOwner(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	p, err := NewProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dial(t, p.Addr())
	if err := roundTrip(c, r, "one"); err != nil {
		t.Fatal(err)
	}
	p.Block("other", ownedBy(os.Getppid())) // the go tool: owns none of these sockets
	if err := roundTrip(c, r, "two"); err != nil {
		t.Fatalf("a block for another process cut this one's connection: %v", err)
	}
	p.Block("self", ownedBy(os.Getpid()))
	if err := roundTrip(c, r, "three"); err == nil {
		t.Fatal("a block for this process left its connection open")
	}
	c2, r2 := dial(t, p.Addr())
	if err := roundTrip(c2, r2, "four"); err == nil {
		t.Fatal("a new connection of the blocked process got through")
	}
	p.Unblock("self")
	c3, r3 := dial(t, p.Addr())
	if err := roundTrip(c3, r3, "five"); err != nil {
		t.Fatalf("after Unblock: %v", err)
	}
}
