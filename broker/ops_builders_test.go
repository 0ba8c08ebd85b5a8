package broker

// Request builders for the operator APIs (AlterConfigs 33, IncrementalAlterConfigs 44,
// AlterPartitionReassignments 45, ListPartitionReassignments 46) in
// TestEveryAdvertisedVersionRoundTrips, and tests of topic config changes reaching the logs.

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() {
	requestBuilders[33] = requestBuilder{build: func(e *dataEnv, v int16) kmsg.Request {
		req := kmsg.NewPtrAlterConfigsRequest()
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "rt"
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		req.ValidateOnly = true
		return req
	}}
	requestBuilders[44] = requestBuilder{build: func(e *dataEnv, v int16) kmsg.Request {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "rt"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1000")
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		req.ValidateOnly = true
		return req
	}}
	requestBuilders[45] = requestBuilder{build: func(e *dataEnv, v int16) kmsg.Request {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		t.Topic = "rt"
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Partition, p.Replicas = 0, []int32{testBrokerID}
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req
	}}
	requestBuilders[46] = requestBuilder{build: func(e *dataEnv, v int16) kmsg.Request {
		return kmsg.NewPtrListPartitionReassignmentsRequest()
	}}
}

func incAlter(topic string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeTopic, topic, ops
	req.Resources = append(req.Resources, r)
	req.ValidateOnly = validateOnly
	return req
}

func incOp(name string, op kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = name, op
	if op != kmsg.IncrementalAlterConfigOpDelete {
		c.Value = kmsg.StringPtr(value)
	}
	return c
}

// TestTopicConfigChangeReachesLogs: IncrementalAlterConfigs/AlterConfigs write
// /config/topics/<t> and a notification; the broker swaps the live log's config, and a
// retention change deletes old segments without a restart.
func TestTopicConfigChangeReachesLogs(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"log.retention.check.interval.ms": "100"})
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	cresp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("cfgchg", 1, 1, "segment.bytes", "1024")), -1).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", cresp.Topics[0].ErrorCode, nil)
	tp := logstore.TopicPartition{Topic: "cfgchg", Partition: 0}
	var lg *logstore.Log
	adminWaitFor(t, 10*time.Second, "log to exist", func() bool {
		var ok bool
		lg, ok = b.logs.GetLog(tp)
		return ok && b.replicas != nil
	})
	adminWaitFor(t, 10*time.Second, "leadership", func() bool {
		p, err := b.replicas.Partition(tp)
		return err == nil && p.IsLeader()
	})
	for i := 0; i < 10; i++ {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "cfgchg"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = valuesBatch(3, 300)
		pt.Partitions = append(pt.Partitions, pp)
		req.Topics = append(req.Topics, pt)
		presp := tc.request(req, -1).(*kmsg.ProduceResponse)
		adminWantCode(t, "produce", presp.Topics[0].Partitions[0].ErrorCode, nil)
	}
	if lg.LogStartOffset() != 0 || lg.Config().RetentionMs != 604800000 {
		t.Fatalf("before: start %d retention %d", lg.LogStartOffset(), lg.Config().RetentionMs)
	}

	// Errors: nothing written.
	for _, c := range []struct {
		name string
		req  *kmsg.IncrementalAlterConfigsRequest
		want *kerr.Error
	}{
		{"unknown topic", incAlter("nope", false, incOp("retention.ms", 0, "1")), kerr.UnknownTopicOrPartition},
		{"bad value", incAlter("cfgchg", false, incOp("retention.ms", 0, "soon")), kerr.InvalidConfig},
		{"unknown key", incAlter("cfgchg", false, incOp("retention.msx", 0, "1")), kerr.InvalidConfig},
		{"append to non-list", incAlter("cfgchg", false, incOp("retention.ms", kmsg.IncrementalAlterConfigOpAppend, "1")), kerr.InvalidConfig},
		{"duplicate key", incAlter("cfgchg", false, incOp("retention.ms", 0, "1"), incOp("retention.ms", 0, "2")), kerr.InvalidRequest},
		{"validate only", incAlter("cfgchg", true, incOp("retention.ms", 0, "1")), nil},
	} {
		resp := tc.request(c.req, -1).(*kmsg.IncrementalAlterConfigsResponse)
		adminWantCode(t, c.name, resp.Resources[0].ErrorCode, c.want)
	}
	if cfg, _ := b.ZK().GetTopicConfig("cfgchg"); cfg["retention.ms"] != "" {
		t.Fatalf("a rejected or validate-only request wrote %v", cfg)
	}

	resp := tc.request(incAlter("cfgchg", false, incOp("retention.ms", 0, "1"),
		incOp("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "compact")), -1).(*kmsg.IncrementalAlterConfigsResponse)
	adminWantCode(t, "incremental alter", resp.Resources[0].ErrorCode, nil)
	adminWaitFor(t, 10*time.Second, "new config on the log", func() bool {
		c := lg.Config()
		return c.RetentionMs == 1 && len(c.CleanupPolicy) == 2
	})
	adminWaitFor(t, 10*time.Second, "retention to delete old segments", func() bool { return lg.LogStartOffset() > 0 })
	if cfg, _ := b.ZK().GetTopicConfig("cfgchg"); cfg["cleanup.policy"] != "delete,compact" || cfg["segment.bytes"] != "1024" {
		t.Fatalf("stored config %v", cfg)
	}

	// AlterConfigs replaces the whole set: retention.ms falls back to the broker default.
	areq := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "cfgchg"
	ac := kmsg.NewAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "segment.bytes", kmsg.StringPtr("2048")
	ar.Configs = append(ar.Configs, ac)
	br := kmsg.NewAlterConfigsRequestResource()
	br.ResourceType, br.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	areq.Resources = append(areq.Resources, ar, br)
	aresp := tc.request(areq, -1).(*kmsg.AlterConfigsResponse)
	adminWantCode(t, "alter configs", aresp.Resources[0].ErrorCode, nil)
	// An empty set for this broker clears /config/brokers/1 (dynamic broker configs).
	adminWantCode(t, "alter broker configs", aresp.Resources[1].ErrorCode, nil)
	adminWaitFor(t, 10*time.Second, "replaced config on the log", func() bool {
		c := lg.Config()
		return c.RetentionMs == 604800000 && c.SegmentBytes == 2048 && len(c.CleanupPolicy) == 1
	})
}
