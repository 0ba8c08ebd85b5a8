package broker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func adminCreateTopicsReq(timeoutMs int32, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis, req.ValidateOnly, req.Topics = timeoutMs, validateOnly, topics
	return req
}

func adminTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		t.Configs = append(t.Configs, c)
	}
	return t
}

func adminCodeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
}

func adminWantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: error %s, want %s", what, adminCodeName(got), adminCodeName(w))
	}
}

func TestCreateTopics(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"num.partitions": "2", "log.segment.bytes": "1048576",
		"offsets.topic.num.partitions": "3"})
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))

	t.Run("success", func(t *testing.T) {
		resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("orders", 3, 1, "retention.ms", "1000")), 7).(*kmsg.CreateTopicsResponse)
		r := resp.Topics[0]
		adminWantCode(t, "create", r.ErrorCode, nil)
		if r.NumPartitions != 3 || r.ReplicationFactor != 1 || r.TopicID == ([16]byte{}) {
			t.Fatalf("result %+v", r)
		}
		got := map[string]kmsg.CreateTopicsResponseTopicConfig{}
		for _, c := range r.Configs {
			got[c.Name] = c
		}
		if c := got["retention.ms"]; c.Value == nil || *c.Value != "1000" || c.Source != 1 {
			t.Fatalf("retention.ms config %+v, want 1000 from TOPIC_CONFIG", c)
		}
		if c := got["segment.bytes"]; c.Value == nil || *c.Value != "1048576" || c.Source != 4 {
			t.Fatalf("segment.bytes config %+v, want 1048576 from STATIC_BROKER_CONFIG", c)
		}
		if c := got["cleanup.policy"]; c.Value == nil || *c.Value != "delete" || c.Source != 5 {
			t.Fatalf("cleanup.policy config %+v, want delete from DEFAULT_CONFIG", c)
		}
		// Znodes as Kafka writes them; leaders elected before the answer (DelayedCreatePartitions).
		a, _, err := b.ZK().GetTopic("orders")
		if err != nil || len(a.Partitions) != 3 || a.TopicID != r.TopicID {
			t.Fatalf("topic znode %+v, %v", a, err)
		}
		cfg, err := b.ZK().GetTopicConfig("orders")
		if err != nil || cfg["retention.ms"] != "1000" || len(cfg) != 1 {
			t.Fatalf("/config/topics/orders = %v, %v", cfg, err)
		}
		for p := int32(0); p < 3; p++ {
			pm, ok := b.Metadata().Partition(logstore.TopicPartition{Topic: "orders", Partition: p})
			if !ok || pm.Leader != 1 {
				t.Fatalf("partition %d metadata %+v, %v: want leader 1 at answer time", p, pm, ok)
			}
		}
	})

	t.Run("already exists", func(t *testing.T) {
		resp := tc.request(adminCreateTopicsReq(1000, false, adminTopic("orders", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
		r := resp.Topics[0]
		adminWantCode(t, "duplicate create", r.ErrorCode, kerr.TopicAlreadyExists)
		if r.ErrorMessage == nil || *r.ErrorMessage != "Topic 'orders' already exists." {
			t.Fatalf("message %v", r.ErrorMessage)
		}
		if r.NumPartitions != -1 || r.ReplicationFactor != -1 || r.Configs == nil || len(r.Configs) != 0 {
			t.Fatalf("failed result must reset num_partitions/rf/configs: %+v", r)
		}
	})

	t.Run("duplicate in request", func(t *testing.T) {
		resp := tc.request(adminCreateTopicsReq(1000, false, adminTopic("dup", 1, 1), adminTopic("dup", 1, 1)), 5).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("%d results", len(resp.Topics))
		}
		for _, r := range resp.Topics {
			adminWantCode(t, "dup", r.ErrorCode, kerr.InvalidRequest)
		}
		if ok, _ := b.ZK().TopicExists("dup"); ok {
			t.Fatal("duplicate topic was created")
		}
	})

	t.Run("replication factor larger than brokers", func(t *testing.T) {
		resp := tc.request(adminCreateTopicsReq(1000, false, adminTopic("rf3", 1, 3)), 4).(*kmsg.CreateTopicsResponse)
		r := resp.Topics[0]
		adminWantCode(t, "rf 3", r.ErrorCode, kerr.InvalidReplicationFactor)
		if r.ErrorMessage == nil || *r.ErrorMessage != "Replication factor: 3 larger than available brokers: 1." {
			t.Fatalf("message %v", r.ErrorMessage)
		}
	})

	t.Run("bad partitions and names and configs", func(t *testing.T) {
		resp := tc.request(adminCreateTopicsReq(1000, false,
			adminTopic("zero", 0, 1),
			adminTopic("bad/name", 1, 1),
			adminTopic("..", 1, 1),
			adminTopic("badcfg", 1, 1, "no.such.config", "1"),
			adminTopic("badval", 1, 1, "retention.ms", "soon"),
		), 7).(*kmsg.CreateTopicsResponse)
		want := []*kerr.Error{kerr.InvalidPartitions, kerr.InvalidTopicException, kerr.InvalidTopicException, kerr.InvalidConfig, kerr.InvalidConfig}
		for i, r := range resp.Topics {
			adminWantCode(t, r.Topic, r.ErrorCode, want[i])
		}
	})

	t.Run("validate only", func(t *testing.T) {
		resp := tc.request(adminCreateTopicsReq(1000, true, adminTopic("vo", 4, 1)), 7).(*kmsg.CreateTopicsResponse)
		r := resp.Topics[0]
		adminWantCode(t, "validate only", r.ErrorCode, nil)
		if r.NumPartitions != 4 || r.ReplicationFactor != 1 || r.TopicID != ([16]byte{}) {
			t.Fatalf("result %+v", r)
		}
		if ok, _ := b.ZK().TopicExists("vo"); ok {
			t.Fatal("validate_only created the topic")
		}
	})

	t.Run("broker defaults", func(t *testing.T) {
		resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("defaults", -1, -1)), 4).(*kmsg.CreateTopicsResponse)
		adminWantCode(t, "defaults", resp.Topics[0].ErrorCode, nil)
		a, _, err := b.ZK().GetTopic("defaults")
		if err != nil || len(a.Partitions) != 2 || len(a.Partitions[0]) != 1 {
			t.Fatalf("assignment %+v, %v; want num.partitions=2, rf 1", a, err)
		}
	})

	t.Run("manual assignment", func(t *testing.T) {
		topic := adminTopic("manual", -1, -1)
		for p := int32(0); p < 2; p++ {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p, []int32{1}
			topic.ReplicaAssignment = append(topic.ReplicaAssignment, ra)
		}
		resp := tc.request(adminCreateTopicsReq(10000, false, topic), 7).(*kmsg.CreateTopicsResponse)
		adminWantCode(t, "manual", resp.Topics[0].ErrorCode, nil)
		both := adminTopic("both", 2, 1)
		both.ReplicaAssignment = topic.ReplicaAssignment
		resp = tc.request(adminCreateTopicsReq(10000, false, both), 7).(*kmsg.CreateTopicsResponse)
		adminWantCode(t, "both counts and assignment", resp.Topics[0].ErrorCode, kerr.InvalidRequest)
	})

	t.Run("zero timeout", func(t *testing.T) {
		// Kafka answers REQUEST_TIMED_OUT at once, yet the topic is created.
		resp := tc.request(adminCreateTopicsReq(0, false, adminTopic("notimeout", 1, 1)), 0).(*kmsg.CreateTopicsResponse)
		adminWantCode(t, "timeout 0", resp.Topics[0].ErrorCode, kerr.RequestTimedOut)
		if ok, _ := b.ZK().TopicExists("notimeout"); !ok {
			t.Fatal("topic not created")
		}
	})

	t.Run("collision", func(t *testing.T) {
		resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("a.b", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
		adminWantCode(t, "a.b", resp.Topics[0].ErrorCode, nil)
		resp = tc.request(adminCreateTopicsReq(10000, false, adminTopic("a_b", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
		adminWantCode(t, "a_b", resp.Topics[0].ErrorCode, kerr.InvalidTopicException)
	})

	t.Run("auto create hook", func(t *testing.T) {
		if err := b.apis.AutoCreateTopic(context.Background(), "auto"); err != nil {
			t.Fatalf("AutoCreateTopic: %v", err)
		}
		a, _, err := b.ZK().GetTopic("auto")
		if err != nil || len(a.Partitions) != 2 {
			t.Fatalf("auto-created %+v, %v", a, err)
		}
		err = b.apis.AutoCreateTopic(context.Background(), "auto")
		if ErrorCode(err) != kerr.TopicAlreadyExists.Code {
			t.Fatalf("second auto-create: %v", err)
		}
		// Internal topics get the coordinator's settings (AutoTopicCreationManager.creatableTopic).
		if err := b.apis.AutoCreateTopic(context.Background(), "__consumer_offsets"); err != nil {
			t.Fatalf("AutoCreateTopic(__consumer_offsets): %v", err)
		}
		a, _, err = b.ZK().GetTopic("__consumer_offsets")
		cfg, cerr := b.ZK().GetTopicConfig("__consumer_offsets")
		if err != nil || cerr != nil || len(a.Partitions) != 3 || cfg["cleanup.policy"] != "compact" || cfg["segment.bytes"] != "104857600" {
			t.Fatalf("__consumer_offsets %+v %v, config %v %v", a, err, cfg, cerr)
		}
	})
}

func TestAdminNotController(t *testing.T) {
	chroot := testChroot(t)
	b1 := startTestBroker(t, chroot, nil)
	waitController(t, b1)
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2"})
	tc := adminDial(t, b2.Addr("PLAINTEXT"))

	resp := tc.request(adminCreateTopicsReq(1000, false, adminTopic("x", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "CreateTopics on non-controller", resp.Topics[0].ErrorCode, kerr.NotController)
	if ok, _ := b2.ZK().TopicExists("x"); ok {
		t.Fatal("non-controller created the topic")
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames, del.TimeoutMillis = []string{"x"}, 1000
	dresp := tc.request(del, 5).(*kmsg.DeleteTopicsResponse)
	adminWantCode(t, "DeleteTopics on non-controller", dresp.Topics[0].ErrorCode, kerr.NotController)

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "x", 2
	cp.Topics, cp.TimeoutMillis = []kmsg.CreatePartitionsRequestTopic{cpt}, 1000
	cresp := tc.request(cp, 3).(*kmsg.CreatePartitionsResponse)
	adminWantCode(t, "CreatePartitions on non-controller", cresp.Topics[0].ErrorCode, kerr.NotController)

	// The controller creates it, with rf 2 over both brokers.
	tc1 := adminDial(t, b1.Addr("PLAINTEXT"))
	adminWaitFor(t, 10*time.Second, "both brokers registered", func() bool {
		ids, _ := b1.ZK().GetBrokerIDs()
		return len(ids) == 2
	})
	resp = tc1.request(adminCreateTopicsReq(15000, false, adminTopic("x", 2, 2)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "CreateTopics on controller", resp.Topics[0].ErrorCode, nil)
}

func TestDeleteTopics(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("doomed", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", resp.Topics[0].ErrorCode, nil)

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames, del.TimeoutMillis = []string{"doomed", "never-was"}, 15000
	t0 := time.Now()
	dresp := tc.request(del, 5).(*kmsg.DeleteTopicsResponse)
	t.Logf("DeleteTopics answered in %v", time.Since(t0))
	if len(dresp.Topics) != 2 {
		t.Fatalf("%d results", len(dresp.Topics))
	}
	// The handler writes the marker and answers once the controller's deletion removed the
	// topic from the metadata cache (DelayedDeleteTopics).
	adminWantCode(t, "delete doomed", dresp.Topics[0].ErrorCode, nil)
	adminWantCode(t, "delete never-was", dresp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
	if b.Metadata().Contains("doomed") {
		t.Fatal("answered before the topic left the metadata cache")
	}
	adminWaitFor(t, 10*time.Second, "topic znodes removed", func() bool {
		exists, _ := b.ZK().TopicExists("doomed")
		marked, _ := b.ZK().GetTopicsMarkedForDeletion()
		return !exists && len(marked) == 0
	})

	// Zero timeout: marked, REQUEST_TIMED_OUT at once (ZkAdminManager.deleteTopics).
	resp = tc.request(adminCreateTopicsReq(10000, false, adminTopic("doomed2", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create doomed2", resp.Topics[0].ErrorCode, nil)
	del.TopicNames, del.TimeoutMillis = []string{"doomed2"}, 0
	adminWantCode(t, "delete timeout 0", tc.request(del, 4).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.RequestTimedOut)

	// v6: by topic id; an unknown id is UNKNOWN_TOPIC_ID, name and id together INVALID_REQUEST.
	del6 := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = [16]byte{1, 2, 3}
	del6.Topics, del6.TimeoutMillis = []kmsg.DeleteTopicsRequestTopic{dt}, 100
	dresp = tc.request(del6, 6).(*kmsg.DeleteTopicsResponse)
	adminWantCode(t, "unknown topic id", dresp.Topics[0].ErrorCode, kerr.UnknownTopicID)
	dt.Topic = kmsg.StringPtr("doomed")
	del6.Topics = []kmsg.DeleteTopicsRequestTopic{dt}
	dresp = tc.request(del6, 6).(*kmsg.DeleteTopicsResponse)
	adminWantCode(t, "name and id", dresp.Topics[0].ErrorCode, kerr.InvalidRequest)
}

func TestDeleteTopicsDisabled(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"delete.topic.enable": "false"})
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames, del.TimeoutMillis = []string{"t"}, 100
	adminWantCode(t, "v3", tc.request(del, 3).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.TopicDeletionDisabled)
	adminWantCode(t, "v2", tc.request(del, 2).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.InvalidRequest)
}

func TestCreatePartitions(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("grow", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", resp.Topics[0].ErrorCode, nil)

	req := func(validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsResponse {
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.Topics, r.TimeoutMillis, r.ValidateOnly = topics, 10000, validateOnly
		return tc.request(r, 3).(*kmsg.CreatePartitionsResponse)
	}
	topic := func(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = name, count
		for _, a := range assignment {
			t.Assignment = append(t.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
		}
		return t
	}

	r := req(true, topic("grow", 5))
	adminWantCode(t, "validate only", r.Topics[0].ErrorCode, nil)
	if a, _, _ := b.ZK().GetTopic("grow"); len(a.Partitions) != 1 {
		t.Fatalf("validate_only changed the assignment: %v", a.Partitions)
	}

	r = req(false, topic("grow", 3))
	adminWantCode(t, "grow to 3", r.Topics[0].ErrorCode, nil)
	a, _, err := b.ZK().GetTopic("grow")
	if err != nil || len(a.Partitions) != 3 || len(a.Partitions[2]) != 1 {
		t.Fatalf("assignment after grow %+v, %v", a, err)
	}
	if pm, ok := b.Metadata().Partition(logstore.TopicPartition{Topic: "grow", Partition: 2}); !ok || pm.Leader != 1 {
		t.Fatalf("new partition has no leader at answer time: %+v", pm)
	}

	r = req(false, topic("grow", 2), topic("nope", 2))
	adminWantCode(t, "shrink", r.Topics[0].ErrorCode, kerr.InvalidPartitions)
	if m := r.Topics[0].ErrorMessage; m == nil || *m != "Topic currently has 3 partitions, which is higher than the requested 2." {
		t.Fatalf("message %v", m)
	}
	adminWantCode(t, "unknown topic", r.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)

	r = req(false, topic("grow", 3))
	adminWantCode(t, "same count", r.Topics[0].ErrorCode, kerr.InvalidPartitions)

	r = req(false, topic("grow", 4, []int32{7}))
	adminWantCode(t, "unknown broker", r.Topics[0].ErrorCode, kerr.InvalidReplicaAssignment)
	r = req(false, topic("grow", 5, []int32{1}))
	adminWantCode(t, "too few assignments", r.Topics[0].ErrorCode, kerr.InvalidReplicaAssignment)
	r = req(false, topic("grow", 4, []int32{1}))
	adminWantCode(t, "manual assignment", r.Topics[0].ErrorCode, nil)

	r = req(false, topic("grow", 6), topic("grow", 7))
	if len(r.Topics) != 1 {
		t.Fatalf("duplicates: %d results, want one per name", len(r.Topics))
	}
	adminWantCode(t, "duplicate", r.Topics[0].ErrorCode, kerr.InvalidRequest)
}

func TestDescribeConfigs(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"log.segment.bytes": "1048576", "log.retention.hours": "24"})
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("cfg", 1, 1, "cleanup.policy", "compact", "retention.ms", "1000")), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", resp.Topics[0].ErrorCode, nil)

	res := func(typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsRequestResource {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
		return r
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	req.Resources = []kmsg.DescribeConfigsRequestResource{
		res(kmsg.ConfigResourceTypeTopic, "cfg"),
		res(kmsg.ConfigResourceTypeTopic, "missing"),
		res(kmsg.ConfigResourceTypeBroker, "1", "broker.id", "log.segment.bytes", "num.io.threads"),
		res(kmsg.ConfigResourceTypeBroker, "2"),
		res(kmsg.ConfigResourceTypeTopic, "bad name"),
	}
	dresp := tc.request(req, 4).(*kmsg.DescribeConfigsResponse)
	if len(dresp.Resources) != 5 {
		t.Fatalf("%d resources", len(dresp.Resources))
	}
	topicRes := dresp.Resources[0]
	adminWantCode(t, "topic", topicRes.ErrorCode, nil)
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range topicRes.Configs {
		got[c.Name] = c
	}
	if len(got) != len(logstore.TopicConfigNames()) {
		t.Fatalf("%d topic configs, want %d", len(got), len(logstore.TopicConfigNames()))
	}
	check := func(name, value string, source kmsg.ConfigSource, synonyms ...string) {
		t.Helper()
		c, ok := got[name]
		if !ok || c.Value == nil || *c.Value != value || c.Source != source {
			t.Fatalf("%s = %+v, want %s from %v", name, c, value, source)
		}
		var syns []string
		for _, s := range c.ConfigSynonyms {
			v := "null"
			if s.Value != nil {
				v = *s.Value
			}
			syns = append(syns, adminSourceNames[int8(s.Source)]+":"+s.Name+"="+v)
		}
		if len(syns) != len(synonyms) {
			t.Fatalf("%s synonyms %v, want %v", name, syns, synonyms)
		}
		for i := range syns {
			if syns[i] != synonyms[i] {
				t.Fatalf("%s synonyms %v, want %v", name, syns, synonyms)
			}
		}
	}
	check("cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig,
		"TOPIC_CONFIG:cleanup.policy=compact", "DEFAULT_CONFIG:log.cleanup.policy=delete")
	// retention.ms: the topic override; log.retention.hours is static but not the primary
	// synonym (log.retention.ms), so Kafka lists none of the broker synonyms.
	check("retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig, "TOPIC_CONFIG:retention.ms=1000")
	check("segment.bytes", "1048576", kmsg.ConfigSourceStaticBrokerConfig,
		"STATIC_BROKER_CONFIG:log.segment.bytes=1048576", "DEFAULT_CONFIG:log.segment.bytes=1073741824")
	check("max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig, "DEFAULT_CONFIG:message.max.bytes=1048588")
	check("segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	adminWantCode(t, "missing topic", dresp.Resources[1].ErrorCode, kerr.UnknownTopicOrPartition)
	brokerRes := dresp.Resources[2]
	adminWantCode(t, "broker 1", brokerRes.ErrorCode, nil)
	bgot := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range brokerRes.Configs {
		bgot[c.Name] = c
	}
	if len(bgot) != 3 {
		t.Fatalf("broker configs %v, want the 3 asked for", brokerRes.Configs)
	}
	if c := bgot["broker.id"]; c.Value == nil || *c.Value != "1" || c.Source != kmsg.ConfigSourceStaticBrokerConfig || !c.ReadOnly {
		t.Fatalf("broker.id %+v", c)
	}
	if c := bgot["num.io.threads"]; c.Value == nil || *c.Value != "8" || c.Source != kmsg.ConfigSourceDefaultConfig || c.ReadOnly {
		t.Fatalf("num.io.threads %+v", c)
	}
	adminWantCode(t, "broker 2", dresp.Resources[3].ErrorCode, kerr.InvalidRequest)
	adminWantCode(t, "bad topic name", dresp.Resources[4].ErrorCode, kerr.InvalidTopicException)

	lreq := kmsg.NewPtrDescribeConfigsRequest()
	lreq.Resources = []kmsg.DescribeConfigsRequestResource{res(kmsg.ConfigResourceTypeBrokerLogger, "1"), res(kmsg.ConfigResourceTypeBrokerLogger, "")}
	lresp := tc.request(lreq, 4).(*kmsg.DescribeConfigsResponse)
	if r := lresp.Resources[0]; r.ErrorCode != 0 || len(r.Configs) == 0 || r.Configs[0].Name != "kafka" || r.Configs[0].Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
		t.Fatalf("BROKER_LOGGER %+v", r)
	}
	adminWantCode(t, "BROKER_LOGGER without id", lresp.Resources[1].ErrorCode, kerr.InvalidRequest)

	// v0 has no sources: is_default instead.
	req.Resources = req.Resources[:1]
	v0 := tc.request(req, 0).(*kmsg.DescribeConfigsResponse)
	for _, c := range v0.Resources[0].Configs {
		if c.Name == "retention.ms" && c.IsDefault || c.Name == "preallocate" && !c.IsDefault {
			t.Fatalf("v0 %s is_default=%v", c.Name, c.IsDefault)
		}
	}
}

// adminSourceNames are Kafka's DescribeConfigsResponse.ConfigSource names.
var adminSourceNames = map[int8]string{1: "TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
	4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG"}

func TestDescribeCluster(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"broker.rack": "r1"})
	waitController(t, b)
	adminWaitFor(t, 10*time.Second, "metadata cache to know the broker", func() bool { return b.Metadata().IsBrokerAlive(1) })
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	resp := tc.request(kmsg.NewPtrDescribeClusterRequest(), 1).(*kmsg.DescribeClusterResponse)
	adminWantCode(t, "describe cluster", resp.ErrorCode, nil)
	if resp.ClusterID != b.ClusterID() || resp.ControllerID != 1 || len(resp.Brokers) != 1 || resp.EndpointType != 1 {
		t.Fatalf("response %+v", resp)
	}
	br := resp.Brokers[0]
	if b.Addr("PLAINTEXT") != net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))) || br.Rack == nil || *br.Rack != "r1" {
		t.Fatalf("broker %+v, want %s rack r1", br, b.Addr("PLAINTEXT"))
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2
	adminWantCode(t, "controller endpoint", tc.request(req, 1).(*kmsg.DescribeClusterResponse).ErrorCode, kerr.MismatchedEndpointType)
}

func TestControllerRequestsFenced(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	adminWaitFor(t, 10*time.Second, "first UpdateMetadata", func() bool { return b.Metadata().IsBrokerAlive(1) })
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	epoch := b.Controller().Epoch()
	if epoch < 1 {
		t.Fatalf("controller epoch %d", epoch)
	}

	um := kmsg.NewPtrUpdateMetadataRequest()
	um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 1, epoch-1, -1
	adminWantCode(t, "UpdateMetadata stale controller epoch", tc.request(um, 8).(*kmsg.UpdateMetadataResponse).ErrorCode, kerr.StaleControllerEpoch)
	um.ControllerEpoch, um.BrokerEpoch = epoch, b.BrokerEpoch()-1
	adminWantCode(t, "UpdateMetadata stale broker epoch", tc.request(um, 8).(*kmsg.UpdateMetadataResponse).ErrorCode, kerr.StaleBrokerEpoch)

	lai := kmsg.NewPtrLeaderAndISRRequest()
	lai.ControllerID, lai.ControllerEpoch, lai.BrokerEpoch = 1, epoch-1, b.BrokerEpoch()
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic = "fenced"
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = 0, 1, 5, []int32{1}, []int32{1}
	ts.PartitionStates = []kmsg.LeaderAndISRRequestTopicPartition{ps}
	lai.TopicStates = []kmsg.LeaderAndISRRequestTopicState{ts}
	lresp := tc.request(lai, 7).(*kmsg.LeaderAndISRResponse)
	adminWantCode(t, "LeaderAndIsr stale controller epoch", lresp.ErrorCode, kerr.StaleControllerEpoch)
	lai.ControllerEpoch, lai.BrokerEpoch = epoch, b.BrokerEpoch()-1
	lresp = tc.request(lai, 4).(*kmsg.LeaderAndISRResponse)
	adminWantCode(t, "LeaderAndIsr stale broker epoch", lresp.ErrorCode, kerr.StaleBrokerEpoch)
	if len(lresp.Partitions) != 1 || lresp.Partitions[0].ErrorCode != kerr.StaleBrokerEpoch.Code || lresp.Partitions[0].Topic != "fenced" {
		t.Fatalf("per-partition errors %+v", lresp.Partitions)
	}
	if _, err := b.replicas.Partition(logstore.TopicPartition{Topic: "fenced"}); err == nil {
		t.Fatal("fenced LeaderAndIsr created a partition")
	}

	sr := kmsg.NewPtrStopReplicaRequest()
	sr.ControllerID, sr.ControllerEpoch, sr.BrokerEpoch = 1, epoch-1, -1
	adminWantCode(t, "StopReplica stale controller epoch", tc.request(sr, 4).(*kmsg.StopReplicaResponse).ErrorCode, kerr.StaleControllerEpoch)
	sr.ControllerEpoch, sr.BrokerEpoch = epoch, b.BrokerEpoch()-1
	adminWantCode(t, "StopReplica stale broker epoch", tc.request(sr, 4).(*kmsg.StopReplicaResponse).ErrorCode, kerr.StaleBrokerEpoch)
}

// Pure checks of the name rules (Topic.validate) and error plumbing.
func TestValidateTopicName(t *testing.T) {
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'a'
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true}, {"a.b_c-D9", true}, {string(long[:249]), true},
		{"", false}, {".", false}, {"..", false}, {string(long), false}, {"a b", false}, {"a/b", false}, {"ä", false},
	} {
		err := validateTopicName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("validateTopicName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && ErrorCode(err) != kerr.InvalidTopicException.Code {
			t.Errorf("validateTopicName(%q) code %d", tc.name, ErrorCode(err))
		}
	}
	if !topicsCollide("a.b", "a_b") || topicsCollide("a.b", "ab") {
		t.Error("collision rule")
	}
	code, msg := apiErrorParts(newAPIError(kerr.InvalidConfig, "Unknown topic config name: %s", "x"))
	if code != kerr.InvalidConfig.Code || msg == nil || *msg != "Unknown topic config name: x" {
		t.Errorf("apiErrorParts = %d %v", code, msg)
	}
	if code, msg := apiErrorParts(&apiError{code: kerr.RequestTimedOut}); code != kerr.RequestTimedOut.Code || msg != nil {
		t.Errorf("apiErrorParts without message = %d %v", code, msg)
	}
	if !errors.Is(newAPIError(kerr.NotController, "x"), kerr.NotController) {
		t.Error("apiError does not unwrap to its code")
	}
}

func TestElectLeaders(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("elect", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", resp.Topics[0].ErrorCode, nil)

	req := kmsg.NewPtrElectLeadersRequest()
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "elect", []int32{0, 7}
	req.Topics, req.TimeoutMillis = []kmsg.ElectLeadersRequestTopic{et}, 5000
	eresp := tc.request(req, 2).(*kmsg.ElectLeadersResponse)
	got := map[int32]int16{}
	for _, tp := range eresp.Topics {
		for _, p := range tp.Partitions {
			got[p.Partition] = p.ErrorCode
		}
	}
	// The preferred replica already leads partition 0; partition 7 does not exist.
	if got[0] != kerr.ElectionNotNeeded.Code || got[7] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("ElectLeaders results %v", got)
	}
}
