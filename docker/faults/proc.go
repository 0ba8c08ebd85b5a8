package faults

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// listens reports whether anything in container's network namespace listens on TCP port:
// the namespace's /proc/<pid>/net/tcp{,6}, read from the host, so the image needs no tools.
func listens(container string, port int) (bool, error) {
	out, err := docker("inspect", "-f", "{{.State.Pid}}", container)
	if err != nil {
		return false, err
	}
	pid := strings.TrimSpace(out)
	if pid == "0" {
		return false, nil // not running
	}
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"tcp", "tcp6"} {
		fh, err := os.Open("/proc/" + pid + "/net/" + f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			// sl local_address rem_address st ...: st 0A is LISTEN.
			if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
				fh.Close()
				return true, nil
			}
		}
		fh.Close()
	}
	return false, nil
}

// serves reports (nil) whether ZooKeeper server z accepts a session and answers a read: a
// server out of the quorum refuses sessions.
func serves(z *Container) error {
	port := z.Env["ZOO_CLIENT_PORT"]
	if _, err := strconv.Atoi(port); err != nil {
		port = "2181"
	}
	// A restarted container may come back on another address: ask docker again.
	ip, err := docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", z.Name)
	if err != nil {
		return err
	}
	f := strings.Fields(ip)
	if len(f) == 0 {
		return fmt.Errorf("%s has no address (not running?)", z.Name)
	}
	c, ev, err := zk.Connect([]string{net.JoinHostPort(f[0], port)}, 4*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.After(3 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				_, _, err := c.Get("/")
				return err
			}
		case <-deadline:
			return fmt.Errorf("%s: no session within 3s", z.Name)
		}
	}
}

// quiet drops go-zookeeper's connection chatter.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
