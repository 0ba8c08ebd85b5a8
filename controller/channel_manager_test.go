package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// flakyBroker fails the first dials and the first request, then answers.
type flakyBroker struct {
	mu           sync.Mutex
	dials        int
	failDials    int
	failRequests int
	requests     []int16
	closed       int
	addrs        []string
	block        chan struct{} // if non-nil, Request blocks until ctx is done
}

func (f *flakyBroker) dial(ctx context.Context, addr, clientID string) (requester, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dials++
	f.addrs = append(f.addrs, addr)
	if f.dials <= f.failDials {
		return nil, errors.New("connection refused")
	}
	return &flakyConn{f}, nil
}

type flakyConn struct{ f *flakyBroker }

func (c *flakyConn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if c.f.block != nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if c.f.failRequests > 0 {
		c.f.failRequests--
		return nil, errors.New("broken pipe")
	}
	c.f.requests = append(c.f.requests, req.Key())
	return req.ResponseKind(), nil
}

func (c *flakyConn) Close() error {
	c.f.mu.Lock()
	c.f.closed++
	c.f.mu.Unlock()
	return nil
}

func brokerAt(id int32, port int32) zkmeta.BrokerInfo {
	return zkmeta.BrokerInfo{ID: id, Endpoints: []zkmeta.Endpoint{
		{ListenerName: "EXTERNAL", Host: "10.0.0.1", Port: 9093, SecurityProtocol: "SSL"},
		{ListenerName: "PLAINTEXT", Host: "127.0.0.1", Port: port, SecurityProtocol: "PLAINTEXT"}}}
}

func TestChannelManagerRetriesInOrder(t *testing.T) {
	f := &flakyBroker{failDials: 2, failRequests: 1}
	m := newChannelManager(0, "PLAINTEXT", time.Second, time.Millisecond, f.dial, testLog(t))
	defer m.shutdown()
	m.addBroker(brokerAt(1, 9092))
	done := make(chan int16, 3)
	for _, req := range []kmsg.Request{kmsg.NewPtrUpdateMetadataRequest(), kmsg.NewPtrLeaderAndISRRequest(), kmsg.NewPtrStopReplicaRequest()} {
		m.send(1, req, func(r kmsg.Response) { done <- r.Key() })
	}
	var got []int16
	for range 3 {
		select {
		case k := <-done:
			got = append(got, k)
		case <-time.After(5 * time.Second):
			t.Fatal("requests not delivered")
		}
	}
	if want := []int16{6, 4, 5}; !equalKeys(got, want) {
		t.Fatalf("callback order %v, want %v", got, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dials != 4 || f.closed != 1 || f.addrs[0] != "127.0.0.1:9092" {
		t.Fatalf("dials=%d closed=%d addr=%s; want 4 dials (2 refused, 1 broken), 1 close, the PLAINTEXT endpoint", f.dials, f.closed, f.addrs[0])
	}
}

func equalKeys(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestChannelManagerDropsUnknownAndStopsBlockedSender(t *testing.T) {
	f := &flakyBroker{block: make(chan struct{})}
	m := newChannelManager(0, "PLAINTEXT", time.Minute, time.Millisecond, f.dial, testLog(t))
	m.send(9, kmsg.NewPtrUpdateMetadataRequest(), func(kmsg.Response) { t.Error("request to an unknown broker delivered") })
	m.addBroker(brokerAt(1, 9092))
	m.send(1, kmsg.NewPtrUpdateMetadataRequest(), nil)
	time.Sleep(20 * time.Millisecond)
	stopped := make(chan struct{})
	go func() { m.removeBroker(1); m.shutdown(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("removeBroker did not stop a sender blocked in a request")
	}
}
