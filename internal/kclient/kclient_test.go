package kclient

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/kafkatest"
)

func TestDialKfakeMetadata(t *testing.T) {
	c := kfake.MustCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := Dial(ctx, c.ListenAddrs()[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Metadata is flexible from v9: exercises the v1 response header.
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	resp, err := conn.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	mr := resp.(*kmsg.MetadataResponse)
	if len(mr.Brokers) != 1 || len(mr.Topics) != 1 || len(mr.Topics[0].Partitions) != 2 {
		t.Fatalf("unexpected metadata %+v", mr)
	}
	r, _ := conn.Versions(3)
	if want := min(req.MaxVersion(), r.Max); req.GetVersion() != want || want < 9 {
		t.Fatalf("metadata sent at v%d, want v%d (>= 9)", req.GetVersion(), want)
	}
}

// apiVersions answers ApiVersions at maxAV or rejects higher versions the KIP-511 way.
func apiVersions(version, maxAV int16, keys map[int16]VersionRange) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	if version > maxAV {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	for k, r := range keys {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: r.Min, MaxVersion: r.Max})
	}
	return resp
}

func TestVersionNegotiationAndFlexibleHeader(t *testing.T) {
	var gotAV []int16
	var mu sync.Mutex
	keys := map[int16]VersionRange{18: {0, 2}, 4: {0, 6}, 6: {0, 5}}
	b := kafkatest.NewServer(t, func(key, version int16, req kmsg.Request) kmsg.Response {
		switch key {
		case 18:
			mu.Lock()
			gotAV = append(gotAV, version)
			mu.Unlock()
			return apiVersions(version, 2, keys)
		case 4:
			lr := req.(*kmsg.LeaderAndISRRequest)
			resp := kmsg.NewPtrLeaderAndISRResponse()
			resp.SetVersion(version)
			resp.ErrorCode = int16(lr.ControllerID) // echo, to check the body round-trips
			return resp
		}
		return nil
	}, kafkatest.WithResponseTags())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := Dial(ctx, b.Addr(), "samsa-controller")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mu.Lock()
	if len(gotAV) != 2 || gotAV[0] != 3 || gotAV[1] != 2 {
		t.Fatalf("ApiVersions versions sent = %v, want [3 2]", gotAV)
	}
	mu.Unlock()

	req := kmsg.NewPtrLeaderAndISRRequest()
	req.ControllerID = 7
	resp, err := conn.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetVersion() != 6 {
		t.Fatalf("LeaderAndIsr sent at v%d, want v6 (broker max)", req.GetVersion())
	}
	if got := resp.(*kmsg.LeaderAndISRResponse).ErrorCode; got != 7 {
		t.Fatalf("echoed controller id = %d, want 7", got)
	}

	// Key the broker does not list.
	if _, err := conn.Request(ctx, kmsg.NewPtrStopReplicaRequest()); !errors.Is(err, ErrUnsupportedRequest) {
		t.Fatalf("StopReplica err = %v, want ErrUnsupportedRequest", err)
	}
	// A rejected request leaves the connection usable.
	if _, err := conn.Request(ctx, kmsg.NewPtrLeaderAndISRRequest()); err != nil {
		t.Fatal(err)
	}
}

func TestRequestContextCancelBreaksConn(t *testing.T) {
	b := kafkatest.NewServer(t, func(key, version int16, req kmsg.Request) kmsg.Response {
		if key == 18 {
			return apiVersions(version, 3, map[int16]VersionRange{18: {0, 3}, 6: {0, 8}})
		}
		return nil // never answer UpdateMetadata
	})
	ctx := context.Background()
	conn, err := Dial(ctx, b.Addr(), "c")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = conn.Request(rctx, kmsg.NewPtrUpdateMetadataRequest())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("request was not interrupted")
	}
	if _, err := conn.Request(ctx, kmsg.NewPtrUpdateMetadataRequest()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after a broken request err = %v, want ErrClosed", err)
	}
}

func TestCloseInterruptsRequest(t *testing.T) {
	b := kafkatest.NewServer(t, func(key, version int16, req kmsg.Request) kmsg.Response {
		if key == 18 {
			return apiVersions(version, 3, map[int16]VersionRange{18: {0, 3}, 6: {0, 8}})
		}
		return nil
	})
	ctx := context.Background()
	conn, err := Dial(ctx, b.Addr(), "c")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Request(ctx, kmsg.NewPtrUpdateMetadataRequest())
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	conn.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("request succeeded after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not interrupt the request")
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestDialRefused(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Dial(context.Background(), addr, "c"); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
}

func TestSkipTags(t *testing.T) {
	rest, err := skipTags([]byte{2, 0, 1, 9, 5, 0, 0xCC})
	if err != nil || len(rest) != 1 || rest[0] != 0xCC {
		t.Fatalf("rest=%x err=%v", rest, err)
	}
	if _, err := skipTags([]byte{1, 0, 5, 1}); err == nil {
		t.Fatal("want error for a tag longer than the buffer")
	}
}
