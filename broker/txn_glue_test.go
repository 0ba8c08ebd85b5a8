package broker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The marker sender reaches a broker at its inter-broker endpoint from the metadata cache,
// keeps one connection per broker across sends, dials again after a failed request, and
// refuses to send after Close.
func TestTxnMarkerSenderConnections(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	var dials, markers atomic.Int32
	var failNext atomic.Bool
	kc.ControlKey(18, func(kmsg.Request) (kmsg.Response, error, bool) {
		dials.Add(1)
		return nil, nil, false
	})
	kc.ControlKey(27, func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		markers.Add(1)
		if failNext.Swap(false) {
			return nil, errors.New("drop the connection"), true
		}
		req := r.(*kmsg.WriteTxnMarkersRequest)
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			resp.Markers = append(resp.Markers, rm)
		}
		return resp, nil, true
	})

	e := newDataEnv(t)
	e.createTopic("rt", 1)
	host, portStr, _ := net.SplitHostPort(kc.ListenAddrs()[0])
	port, _ := strconv.Atoi(portStr)
	e.updateMetadataReq(func(req *kmsg.UpdateMetadataRequest) {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = 7
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = host, int32(port), "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, ep)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	})

	s := newTxnMarkerSender(e.apis)
	if id, ok := s.Leader("rt", 0); !ok || id != testBrokerID {
		t.Fatalf("Leader(rt, 0) = %d, %v", id, ok)
	}
	if _, ok := s.Leader("rt", 5); ok {
		t.Fatal("Leader of a partition that does not exist")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	send := func(pid int64) (*kmsg.WriteTxnMarkersResponse, error) {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, 0, true, 3
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "rt", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return s.Send(ctx, 7, req)
	}
	for pid := int64(1); pid <= 3; pid++ {
		resp, err := send(pid)
		if err != nil || len(resp.Markers) != 1 || resp.Markers[0].ProducerID != pid {
			t.Fatalf("send %d: %+v %v", pid, resp, err)
		}
	}
	if dials.Load() != 1 || markers.Load() != 3 {
		t.Fatalf("%d dials for %d requests, want 1 for 3", dials.Load(), markers.Load())
	}
	failNext.Store(true)
	if _, err := send(4); err == nil {
		t.Fatal("send on a dropped connection succeeded")
	}
	if resp, err := send(5); err != nil || resp.Markers[0].ProducerID != 5 {
		t.Fatalf("send after a failure: %+v %v", resp, err)
	}
	if dials.Load() != 2 {
		t.Fatalf("%d dials, want 2 (one again after the failure)", dials.Load())
	}
	if _, err := s.Send(ctx, 9, kmsg.NewPtrWriteTxnMarkersRequest()); !errors.Is(err, kerr.BrokerNotAvailable) {
		t.Fatalf("send to an unknown broker: %v", err)
	}

	// A partition whose leader is not alive: no destination yet, but the marker is kept.
	e.updateMetadataWithLeader("rt", 8, []int32{8})
	if id, ok := s.Leader("rt", 0); !ok || id != -1 {
		t.Fatalf("Leader(rt, 0) with a dead leader = %d, %v, want -1, true", id, ok)
	}

	s.Close()
	if _, err := send(6); !errors.Is(err, errMarkerSenderClosed) {
		t.Fatalf("send after Close: %v", err)
	}
}

// fencedForVersion keeps PRODUCER_FENCED from versions that predate it.
func TestTxnFencedForVersion(t *testing.T) {
	for _, c := range []struct {
		code, version, first, want int16
	}{
		{kerr.ProducerFenced.Code, 0, 2, kerr.InvalidProducerEpoch.Code},
		{kerr.ProducerFenced.Code, 1, 2, kerr.InvalidProducerEpoch.Code},
		{kerr.ProducerFenced.Code, 2, 2, kerr.ProducerFenced.Code},
		{kerr.ProducerFenced.Code, 3, 4, kerr.InvalidProducerEpoch.Code},
		{kerr.ProducerFenced.Code, 4, 4, kerr.ProducerFenced.Code},
		{kerr.ConcurrentTransactions.Code, 0, 2, kerr.ConcurrentTransactions.Code},
		{0, 0, 2, 0},
	} {
		if got := fencedForVersion(c.code, c.version, c.first); got != c.want {
			t.Errorf("fencedForVersion(%d, v%d, %d) = %d, want %d", c.code, c.version, c.first, got, c.want)
		}
	}
}
