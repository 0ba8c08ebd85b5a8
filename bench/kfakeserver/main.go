// Command kfakeserver runs franz-go's in-memory kfake cluster in its own process, so the
// bench can read its CPU time from /proc like a real broker's. It prints "ready <addrs>"
// on stdout once listening and exits on SIGTERM/SIGINT or when stdin closes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	ports := flag.String("ports", "", "comma-separated ports, one per broker (empty = one broker on a free port)")
	flag.Parse()
	var opts []kfake.Opt
	if *ports != "" {
		var ps []int
		for _, p := range strings.Split(*ports, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				fmt.Fprintf(os.Stderr, "kfakeserver: bad port %q\n", p)
				os.Exit(2)
			}
			ps = append(ps, n)
		}
		opts = append(opts, kfake.NumBrokers(len(ps)), kfake.Ports(ps...))
	} else {
		opts = append(opts, kfake.NumBrokers(1))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfakeserver: %v\n", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Printf("ready %s\n", strings.Join(c.ListenAddrs(), ","))

	done := make(chan struct{})
	go func() { // stdin closing (the bench died) stops us too
		io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-done:
	}
}
