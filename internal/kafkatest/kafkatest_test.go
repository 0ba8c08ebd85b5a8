package kafkatest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/kafkatest"
)

// TestServerAnswersKgo: franz-go negotiates versions with the server and reads a flexible
// Metadata response whose header carries an unknown tagged field.
func TestServerAnswersKgo(t *testing.T) {
	var port int32 // set before any client connects
	srv := kafkatest.NewServer(t, func(key, version int16, req kmsg.Request) kmsg.Response {
		switch req.(type) {
		case *kmsg.ApiVersionsRequest:
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.SetVersion(version)
			for _, k := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest()} {
				resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.Key(), MaxVersion: k.MaxVersion()})
			}
			return resp
		case *kmsg.MetadataRequest:
			resp := kmsg.NewPtrMetadataResponse()
			resp.SetVersion(version)
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = 7, "127.0.0.1", port
			resp.Brokers = append(resp.Brokers, b)
			return resp
		}
		return nil
	}, kafkatest.WithResponseTags())
	port = srv.Port()

	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("metadata through kafkatest: %v", err)
	}
	mr := resp.(*kmsg.MetadataResponse)
	if !req.IsFlexible() || len(mr.Brokers) != 1 || mr.Brokers[0].NodeID != 7 || mr.Brokers[0].Port != port {
		t.Fatalf("metadata v%d (flexible %v): brokers %+v, want node 7 at port %d", req.GetVersion(), req.IsFlexible(), mr.Brokers, port)
	}
}
