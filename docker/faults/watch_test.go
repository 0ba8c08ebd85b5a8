//go:build dockertest

package faults

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// change is one change of ZooKeeper's view (a partition's leader, epoch and ISR, or the
// controller) seen by watch.
type change struct {
	at   time.Time
	what string
}

// history is what watch records while a load runs.
type history struct {
	mu      sync.Mutex
	changes []change
}

func (h *history) add(what string) {
	h.mu.Lock()
	h.changes = append(h.changes, change{time.Now(), what})
	h.mu.Unlock()
}

// lines is every change, timed from t0.
func (h *history) lines(t0 time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.changes {
		out = append(out, fmt.Sprintf("%+7.2fs %s", c.at.Sub(t0).Seconds(), c.what))
	}
	return out
}

// watch polls ZooKeeper every 250 ms until finish has healed everything: every partition's state znode
// and /controller, recording each change (the leaders and ISRs the controller wrote).
func (l *load) watch() {
	e := l.e
	l.watchWG.Add(1)
	go func() {
		defer l.watchWG.Done()
		prev := map[int32]string{}
		prevCtl := ""
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			for p := int32(0); p < partitions; p++ {
				s, err := e.state(l.topic, p)
				if err != nil {
					continue
				}
				now := fmt.Sprintf("leader %d, epoch %d, ISR %v", s.Leader, s.LeaderEpoch, s.ISR)
				if now != prev[p] {
					l.history.add(fmt.Sprintf("partition %d: %s", p, now))
					prev[p] = now
				}
			}
			id, cz, err := e.controller()
			now := fmt.Sprintf("controller %d (czxid %#x)", id, cz)
			if err != nil {
				now = "no controller"
			}
			if now != prevCtl {
				l.history.add(now)
				prevCtl = now
			}
			select {
			case <-l.watchStop:
				return
			case <-tick.C:
			}
		}
	}()
}

// acceptedBy is the probes broker id acknowledged of the sent ones it was sent in (from, to).
func (l *load) acceptedBy(id int32, from, to time.Time) (accepted []Probe, sent int) {
	_, probes, _, _ := l.ledger.Snapshot()
	for _, p := range probes {
		if p.Broker == id && p.Sent.After(from) && p.Sent.Before(to) {
			sent++
			if p.Err == nil {
				accepted = append(accepted, p)
			}
		}
	}
	return accepted, sent
}

// zkSessions is the brokers with a session on ZooKeeper server z, from its stat command
// (allowed by ZOO_4LW_COMMANDS_WHITELIST): the client addresses it lists, matched to the
// brokers' container addresses.
func (e *env) zkSessions(z *Container) ([]int32, error) {
	port := z.Env["ZOO_CLIENT_PORT"]
	if port == "" {
		port = "2181"
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(z.IP, port), 3*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, "stat"); err != nil {
		return nil, err
	}
	out, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "/") {
			continue
		}
		host, _, err := net.SplitHostPort(strings.TrimPrefix(strings.SplitN(line, "[", 2)[0], "/"))
		if err != nil {
			continue
		}
		for _, b := range e.p.Brokers {
			if b.IP == host {
				ids = append(ids, b.BrokerID)
			}
		}
	}
	return ids, nil
}
