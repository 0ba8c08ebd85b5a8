package integration

// The authorization matrix of issue 14 through real authentication and the real
// AclAuthorizer: four principals (a super user, a producer-only user, a consumer-only user
// with a PREFIXED topic ACL, anonymous on a PLAINTEXT listener) × the requests a client
// makes, each answered as Kafka 3.7's KafkaApis answers it: allowed exactly where the ACLs
// say, otherwise Kafka's error code; a topic the principal may not describe is absent from
// Metadata. Requests go through kgo straight to the one broker, so the codes are the
// broker's, not the client's; two cases run kgo's own idempotent and transactional producers
// end to end.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// sclAbsent is the matrix's pseudo code for "the topic is not listed in Metadata".
const sclAbsent int16 = -1

// sclOther is the pseudo code of a client error that carries no Kafka code.
const sclOther int16 = -2

// sclPrincipal is one column of the matrix with what its requests carry and what they
// learnt (member id, producer ids) for the requests after them.
type sclPrincipal struct {
	name  string
	cl    *kgo.Client
	opts  []kgo.Opt // the client's connection options, for the end-to-end producers
	group string
	txnID string

	memberID   string
	generation int32
	idemPID    int64
	idemEpoch  int16
	txnPID     int64
	txnEpoch   int16
}

type sclCase struct {
	api  string
	want [4]int16 // super, producer, consumer, anonymous; 0 = allowed
	run  func(ctx context.Context, p *sclPrincipal) (int16, error)
}

func sclCodeName(c int16) string {
	switch c {
	case 0:
		return "allowed"
	case sclAbsent:
		return "absent"
	case sclOther:
		return "client error"
	}
	if err := kerr.ErrorForCode(c); err != nil {
		return err.(*kerr.Error).Message
	}
	return fmt.Sprint(c)
}

// sclRetry repeats a request while the broker answers a transient code (coordinator still
// loading, transaction still completing, group rebalancing).
func sclRetry(ctx context.Context, fn func() (int16, error)) (int16, error) {
	for {
		code, err := fn()
		if err != nil {
			return code, err
		}
		switch code {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code,
			kerr.ConcurrentTransactions.Code, kerr.RebalanceInProgress.Code, kerr.LeaderNotAvailable.Code:
		default:
			return code, nil
		}
		select {
		case <-ctx.Done():
			return code, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sclKgoCode is a kgo error's Kafka code (0 for nil, sclOther when it carries none).
func sclKgoCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return sclOther
}

func TestSecurityAuthorizationMatrix(t *testing.T) {
	users := map[string]string{"broker": sclBrokerSecret, "admin": "admin-secret", "producer": "producer-secret"}
	c := StartCluster(t, ClusterConfig{Brokers: 1, Listeners: []string{"SASL_PLAINTEXT", "PLAINTEXT"}, Props: map[string]string{
		"inter.broker.listener.name":                                  "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                                     "PLAIN,SCRAM-SHA-256",
		"sasl.mechanism.inter.broker.protocol":                        "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":         sclPlainJAAS("broker", users),
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": sclScramModule + " required;",
		"authorizer.class.name":                                       sclAuthorizer,
		"super.users":                                                 "User:broker;User:admin",
		"auto.create.topics.enable":                                   "false",
		"transaction.state.log.replication.factor":                    "1",
		"transaction.state.log.min.isr":                               "1",
		"transaction.state.log.num.partitions":                        "1",
		"offsets.topic.num.partitions":                                "1",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := c.Brokers[0]
	saslAddr, plainAddr := []string{b.AddrOf("SASL_PLAINTEXT")}, []string{b.AddrOf("PLAINTEXT")}
	// Clients send AddPartitionsToTxn v3 at most; v4+ is the brokers' batched verification.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(24, 3)
	common := []kgo.Opt{kgo.MaxVersions(versions)}
	plainLogin := func(u string) kgo.Opt { return kgo.SASL(plain.Auth{User: u, Pass: users[u]}.AsMechanism()) }

	// Set-up as the super user: the consumer's SCRAM credential, two topics, the ACLs.
	adminOpts := append([]kgo.Opt{kgo.SeedBrokers(saslAddr...), plainLogin("admin")}, common...)
	adm := kadm.NewClient(sclClient(t, saslAddr, adminOpts...))
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "consumer", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "consumer-secret"}})
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		t.Fatalf("alter SCRAM credential: %v", err)
	}
	const orders, secret = "orders", "secret"
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, orders, secret); err != nil {
		t.Fatal(err)
	}
	for _, acl := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:producer").Topics(orders).Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:producer").Clusters().Operations(kadm.OpIdempotentWrite),
		kadm.NewACLs().Allow("User:producer").TransactionalIDs("orders-tx").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:consumer").Topics("order").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("User:consumer").Groups("billing").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
	} {
		res, err := adm.CreateACLs(ctx, acl)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create ACL %s %s: %v", r.Principal, r.Name, r.Err)
			}
		}
	}
	var topicIDs = map[string][16]byte{}
	waitFor(t, 15*time.Second, func() error {
		td, err := adm.ListTopics(ctx, orders, secret)
		if err == nil {
			err = td.Error()
		}
		for _, d := range td {
			topicIDs[d.Topic] = d.ID
		}
		return err
	})
	seed := sclClient(t, saslAddr, plainLogin("admin"), kgo.DefaultProduceTopic(orders))
	for _, v := range []string{"a", "b"} {
		if err := seed.ProduceSync(ctx, kgo.StringRecord(v), &kgo.Record{Topic: secret, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce as admin: %v", err)
		}
	}

	principals := []*sclPrincipal{
		{name: "super", group: "admin-group", txnID: "admin-tx",
			opts: append([]kgo.Opt{kgo.SeedBrokers(saslAddr...), plainLogin("admin")}, common...)},
		{name: "producer", group: "billing", txnID: "orders-tx",
			opts: append([]kgo.Opt{kgo.SeedBrokers(saslAddr...), plainLogin("producer")}, common...)},
		{name: "consumer", group: "billing", txnID: "orders-tx",
			opts: append([]kgo.Opt{kgo.SeedBrokers(saslAddr...), kgo.SASL(scram.Auth{User: "consumer", Pass: "consumer-secret"}.AsSha256Mechanism())}, common...)},
		{name: "anonymous", group: "billing", txnID: "orders-tx",
			opts: append([]kgo.Opt{kgo.SeedBrokers(plainAddr...)}, common...)},
	}
	for _, p := range principals {
		cl, err := kgo.NewClient(p.opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		p.cl = cl
		p.idemPID, p.txnPID = 999_999, 999_999 // what a denied principal sends: it got none
	}
	// The SCRAM credential and the ACLs are applied by ZooKeeper notification.
	waitFor(t, 15*time.Second, func() error {
		for _, p := range principals[1:3] {
			code, err := sclTopicMetadata(ctx, p.cl, orders)
			if err == nil && code != 0 {
				err = kerr.ErrorForCode(code)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		return nil
	})

	cases := sclMatrixCases(t, topicIDs)
	start := time.Now()
	var total, allowedOK, deniedOK, unexpectedOK, unexpectedDenied, wrongCode int
	for i, p := range principals {
		var row []string
		for _, cs := range cases {
			want := cs.want[i]
			rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
			got, err := cs.run(rctx, p)
			rcancel()
			total++
			if err != nil {
				got = sclOther
				t.Logf("%s / %s: %v", p.name, cs.api, err)
			}
			switch {
			case got == want && want == 0:
				allowedOK++
			case got == want:
				deniedOK++
			case got == 0:
				unexpectedOK++
				t.Errorf("UNEXPECTED SUCCESS: %s may not %s, want %s", p.name, cs.api, sclCodeName(want))
			case want == 0:
				unexpectedDenied++
				t.Errorf("%s should be allowed to %s, got %s", p.name, cs.api, sclCodeName(got))
			default:
				wrongCode++
				t.Errorf("%s / %s: got %s, want %s", p.name, cs.api, sclCodeName(got), sclCodeName(want))
			}
			row = append(row, fmt.Sprintf("%s=%s", cs.api, sclCodeName(got)))
		}
		t.Logf("%s: %s", p.name, strings.Join(row, "; "))
	}
	t.Logf("authorization matrix: %d cases (%d principals × %d requests) in %v: %d allowed as expected, %d denied as expected, "+
		"%d unexpected successes, %d unexpected denials, %d wrong codes",
		total, len(principals), len(cases), time.Since(start).Round(time.Millisecond), allowedOK, deniedOK, unexpectedOK, unexpectedDenied, wrongCode)
}

// sclMatrixCases are the requests, in an order where later ones use what earlier ones
// learnt (the group member, the producer ids).
func sclMatrixCases(t *testing.T, topicIDs map[string][16]byte) []sclCase {
	const orders, secret = "orders", "secret"
	T, G, C, X, A := kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code,
		kerr.TransactionalIDAuthorizationFailed.Code, sclAbsent

	listed := func(topic string) func(context.Context, *sclPrincipal) (int16, error) {
		return func(ctx context.Context, p *sclPrincipal) (int16, error) {
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, p.cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			for _, tp := range resp.Topics {
				if tp.Topic != nil && *tp.Topic == topic {
					return tp.ErrorCode, nil
				}
			}
			return sclAbsent, nil
		}
	}
	described := func(topic string) func(context.Context, *sclPrincipal) (int16, error) {
		return func(ctx context.Context, p *sclPrincipal) (int16, error) { return sclTopicMetadata(ctx, p.cl, topic) }
	}
	batch := func(attrs int16, pid int64, epoch int16, seq int32) []byte {
		ts := time.Now().UnixMilli()
		b, err := recordbatch.Build(recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs, BaseTimestamp: ts, MaxTimestamp: ts,
			ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, []recordbatch.Record{{Value: []byte("matrix")}}, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	produce := func(ctx context.Context, p *sclPrincipal, topic string, txnID *string, records []byte) (int16, error) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, txnID
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 0, records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		return resp.Topics[0].Partitions[0].ErrorCode, nil
	}
	fetch := func(topic string) func(context.Context, *sclPrincipal) (int16, error) {
		return func(ctx context.Context, p *sclPrincipal) (int16, error) {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
			req.SessionEpoch = -1
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = topic, topicIDs[topic]
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 0, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
			resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			if resp.ErrorCode != 0 {
				return resp.ErrorCode, nil
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				return 0, fmt.Errorf("fetch response %+v", resp.Topics)
			}
			fr := resp.Topics[0].Partitions[0]
			if fr.ErrorCode == 0 && len(fr.RecordBatches) == 0 {
				return 0, errors.New("fetch allowed but returned no records")
			}
			return fr.ErrorCode, nil
		}
	}
	findCoordinator := func(keyType int8, key func(*sclPrincipal) string) func(context.Context, *sclPrincipal) (int16, error) {
		return func(ctx context.Context, p *sclPrincipal) (int16, error) {
			return sclRetry(ctx, func() (int16, error) {
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = keyType, key(p), []string{key(p)}
				resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
				if err != nil {
					return 0, err
				}
				if len(resp.Coordinators) > 0 {
					return resp.Coordinators[0].ErrorCode, nil
				}
				return resp.ErrorCode, nil
			})
		}
	}
	join := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{orders}
		return sclRetry(ctx, func() (int16, error) {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = p.group, 10000, 10000
			req.MemberID, req.ProtocolType = p.memberID, "consumer"
			proto := kmsg.NewJoinGroupRequestProtocol()
			proto.Name, proto.Metadata = "range", meta.AppendTo(nil)
			req.Protocols = append(req.Protocols, proto)
			resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			if resp.ErrorCode == kerr.MemberIDRequired.Code {
				p.memberID = resp.MemberID
				return kerr.RebalanceInProgress.Code, nil // join again with the id
			}
			if resp.ErrorCode == 0 {
				p.memberID, p.generation = resp.MemberID, resp.Generation
			}
			return resp.ErrorCode, nil
		})
	}
	member := func(p *sclPrincipal) (string, int32) {
		if p.memberID == "" {
			return "not-a-member", 1
		}
		return p.memberID, p.generation
	}
	sync := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group = p.group
		req.MemberID, req.Generation = member(p)
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = req.MemberID
		assignment := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = orders, []int32{0}
		assignment.Topics = append(assignment.Topics, at)
		a.MemberAssignment = assignment.AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, a)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		return resp.ErrorCode, nil
	}
	heartbeat := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group = p.group
		req.MemberID, req.Generation = member(p)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		return resp.ErrorCode, nil
	}
	commit := func(topic string) func(context.Context, *sclPrincipal) (int16, error) {
		return func(ctx context.Context, p *sclPrincipal) (int16, error) {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group = p.group
			req.MemberID, req.Generation = member(p)
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		}
	}
	offsetFetch := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = p.group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = orders, []int32{0}
		req.Topics = append(req.Topics, rt)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = p.group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = orders, []int32{0}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		if req.Version >= 8 {
			g := resp.Groups[0]
			if g.ErrorCode != 0 {
				return g.ErrorCode, nil
			}
			part := g.Topics[0].Partitions[0]
			if part.ErrorCode == 0 && part.Offset != 1 {
				return 0, fmt.Errorf("committed offset %d, want 1", part.Offset)
			}
			return part.ErrorCode, nil
		}
		if resp.ErrorCode != 0 {
			return resp.ErrorCode, nil
		}
		return resp.Topics[0].Partitions[0].ErrorCode, nil
	}
	// Authorized operations (KIP-430) as the AclAuthorizer computes them, for the
	// principals that may describe the resource.
	bits := func(ops ...kmsg.ACLOperation) int32 {
		var b int32
		for _, op := range ops {
			b |= 1 << op
		}
		return b
	}
	R, W, D := kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe
	topicOps := map[string]int32{
		"super": bits(R, W, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, D,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs),
		"producer": bits(W, D),
		"consumer": bits(R, D),
	}
	groupOps := map[string]int32{"super": bits(R, D, kmsg.ACLOperationDelete), "consumer": bits(R, D)}
	topicAuthorizedOps := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrMetadataRequest()
		req.IncludeTopicAuthorizedOperations = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(orders)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		tp := resp.Topics[0]
		if tp.ErrorCode == 0 && tp.AuthorizedOperations != topicOps[p.name] {
			return 0, fmt.Errorf("topic authorized operations %#x, want %#x", tp.AuthorizedOperations, topicOps[p.name])
		}
		return tp.ErrorCode, nil
	}
	describeGroup := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups, req.IncludeAuthorizedOperations = []string{p.group}, true
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		g := resp.Groups[0]
		if g.ErrorCode == 0 && g.AuthorizedOperations != groupOps[p.name] {
			return 0, fmt.Errorf("group authorized operations %#x, want %#x", g.AuthorizedOperations, groupOps[p.name])
		}
		return g.ErrorCode, nil
	}
	leave := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = p.group
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID, _ = member(p)
		req.MemberID, req.Members = m.MemberID, append(req.Members, m)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		if resp.ErrorCode != 0 || len(resp.Members) == 0 {
			return resp.ErrorCode, nil
		}
		return resp.Members[0].ErrorCode, nil
	}
	createTopic := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "made-by-"+p.name, 1, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		return resp.Topics[0].ErrorCode, nil
	}
	deleteTopic := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		// The super user deletes what it created; the others try to delete orders.
		name := orders
		if p.name == "super" {
			name = "made-by-super"
		}
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 10000
		req.TopicNames = []string{name}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		return resp.Topics[0].ErrorCode, nil
	}
	describeConfigs := func(rt kmsg.ConfigResourceType, name string) func(context.Context, *sclPrincipal) (int16, error) {
		return func(ctx context.Context, p *sclPrincipal) (int16, error) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName = rt, name
			req.Resources = append(req.Resources, r)
			resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			return resp.Resources[0].ErrorCode, nil
		}
	}
	alterConfigs := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly = true // AlterConfigs replaces the whole set; only validate
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, orders
		cfg := kmsg.NewAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("86400000")
		r.Configs = append(r.Configs, cfg)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		return resp.Resources[0].ErrorCode, nil
	}
	incrementalAlterConfigs := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, orders
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("86400000")
		r.Configs = append(r.Configs, cfg)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		return resp.Resources[0].ErrorCode, nil
	}
	describeACLs := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		if resp.ErrorCode == 0 && len(resp.Resources) < 4 {
			return 0, fmt.Errorf("DescribeAcls lists %d resources, want the 4 with ACLs", len(resp.Resources))
		}
		return resp.ErrorCode, nil
	}
	createACL := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		req := kmsg.NewPtrCreateACLsRequest()
		req.Creations = append(req.Creations, sclCreateACL("User:nobody", "acl-by-"+p.name, kmsg.ACLResourcePatternTypeLiteral))
		resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
		if err != nil {
			return 0, err
		}
		return resp.Results[0].ErrorCode, nil
	}
	initPID := func(txn bool) func(context.Context, *sclPrincipal) (int16, error) {
		return func(ctx context.Context, p *sclPrincipal) (int16, error) {
			return sclRetry(ctx, func() (int16, error) {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionTimeoutMillis = 60000
				if txn {
					req.TransactionalID = kmsg.StringPtr(p.txnID)
				}
				resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
				if err != nil {
					return 0, err
				}
				if resp.ErrorCode != 0 {
					return resp.ErrorCode, nil
				}
				if txn {
					p.txnPID, p.txnEpoch = resp.ProducerID, resp.ProducerEpoch
				} else {
					p.idemPID, p.idemEpoch = resp.ProducerID, resp.ProducerEpoch
				}
				return 0, nil
			})
		}
	}
	addPartitions := func(topic string) func(context.Context, *sclPrincipal) (int16, error) {
		return func(ctx context.Context, p *sclPrincipal) (int16, error) {
			return sclRetry(ctx, func() (int16, error) {
				req := kmsg.NewPtrAddPartitionsToTxnRequest()
				req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.txnID, p.txnPID, p.txnEpoch
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic, rt.Partitions = topic, []int32{0}
				req.Topics = append(req.Topics, rt)
				resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
				if err != nil {
					return 0, err
				}
				if resp.Version > 3 {
					return 0, fmt.Errorf("AddPartitionsToTxn sent at v%d", resp.Version)
				}
				return resp.Topics[0].Partitions[0].ErrorCode, nil
			})
		}
	}
	endTxn := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		return sclRetry(ctx, func() (int16, error) {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.txnID, p.txnPID, p.txnEpoch, true
			resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		})
	}
	kgoIdempotent := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		cl, err := kgo.NewClient(append(slices.Clip(p.opts), kgo.DefaultProduceTopic(orders))...)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		return sclKgoCode(cl.ProduceSync(ctx, kgo.StringRecord("kgo-idempotent")).FirstErr()), nil
	}
	kgoTransaction := func(ctx context.Context, p *sclPrincipal) (int16, error) {
		cl, err := kgo.NewClient(append(slices.Clip(p.opts), kgo.DefaultProduceTopic(orders), kgo.TransactionalID(p.txnID))...)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			return sclKgoCode(err), nil
		}
		if err := cl.ProduceSync(ctx, kgo.StringRecord("kgo-txn")).FirstErr(); err != nil {
			cl.EndTransaction(ctx, kgo.TryAbort)
			return sclKgoCode(err), nil
		}
		return sclKgoCode(cl.EndTransaction(ctx, kgo.TryCommit)), nil
	}

	group := func(p *sclPrincipal) string { return p.group }
	txnID := func(p *sclPrincipal) string { return p.txnID }
	return []sclCase{
		// Metadata: a topic the principal may not describe is not listed; asked for by
		// name it is TOPIC_AUTHORIZATION_FAILED.
		{"Metadata(all) lists orders", [4]int16{0, 0, 0, A}, listed(orders)},
		{"Metadata(all) lists secret", [4]int16{0, A, A, A}, listed(secret)},
		{"Metadata(orders)", [4]int16{0, 0, 0, T}, described(orders)},
		{"Metadata(secret)", [4]int16{0, T, T, T}, described(secret)},
		{"Metadata(orders) authorized operations", [4]int16{0, 0, 0, T}, topicAuthorizedOps},
		{"ListOffsets(orders)", [4]int16{0, 0, 0, T}, func(ctx context.Context, p *sclPrincipal) (int16, error) {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = orders
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = 0, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, p.cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		}},
		{"Produce(orders)", [4]int16{0, 0, T, T}, func(ctx context.Context, p *sclPrincipal) (int16, error) {
			return produce(ctx, p, orders, nil, batch(0, -1, -1, -1))
		}},
		{"Produce(secret)", [4]int16{0, T, T, T}, func(ctx context.Context, p *sclPrincipal) (int16, error) {
			return produce(ctx, p, secret, nil, batch(0, -1, -1, -1))
		}},
		{"Fetch(orders)", [4]int16{0, T, 0, T}, fetch(orders)},
		{"Fetch(secret)", [4]int16{0, T, T, T}, fetch(secret)},
		{"FindCoordinator(group)", [4]int16{0, G, 0, G}, findCoordinator(0, group)},
		{"JoinGroup", [4]int16{0, G, 0, G}, join},
		{"SyncGroup", [4]int16{0, G, 0, G}, sync},
		{"Heartbeat", [4]int16{0, G, 0, G}, heartbeat},
		{"OffsetCommit(orders)", [4]int16{0, G, 0, G}, commit(orders)},
		{"OffsetCommit(secret)", [4]int16{0, G, T, G}, commit(secret)},
		{"OffsetFetch(orders)", [4]int16{0, G, 0, G}, offsetFetch},
		{"DescribeGroups", [4]int16{0, G, 0, G}, describeGroup},
		{"LeaveGroup", [4]int16{0, G, 0, G}, leave},
		{"CreateTopics", [4]int16{0, T, T, T}, createTopic},
		{"DeleteTopics", [4]int16{0, T, T, T}, deleteTopic},
		{"DescribeConfigs(topic)", [4]int16{0, T, T, T}, describeConfigs(kmsg.ConfigResourceTypeTopic, orders)},
		{"DescribeConfigs(broker)", [4]int16{0, C, C, C}, describeConfigs(kmsg.ConfigResourceTypeBroker, "0")},
		{"AlterConfigs(topic)", [4]int16{0, T, T, T}, alterConfigs},
		{"IncrementalAlterConfigs(topic)", [4]int16{0, T, T, T}, incrementalAlterConfigs},
		{"DescribeAcls", [4]int16{0, C, C, C}, describeACLs},
		{"CreateAcls", [4]int16{0, C, C, C}, createACL},
		// Idempotent produce: IDEMPOTENT_WRITE on the cluster (or WRITE on some topic).
		{"InitProducerId(idempotent)", [4]int16{0, 0, C, C}, initPID(false)},
		{"Produce(orders, idempotent)", [4]int16{0, 0, T, T}, func(ctx context.Context, p *sclPrincipal) (int16, error) {
			return produce(ctx, p, orders, nil, batch(0, p.idemPID, p.idemEpoch, 0))
		}},
		// Transactions: WRITE on the transactional id, then WRITE on each topic.
		{"FindCoordinator(txn)", [4]int16{0, 0, X, X}, findCoordinator(1, txnID)},
		{"InitProducerId(txn)", [4]int16{0, 0, X, X}, initPID(true)},
		{"AddPartitionsToTxn(secret)", [4]int16{0, T, X, X}, addPartitions(secret)},
		{"AddPartitionsToTxn(orders)", [4]int16{0, 0, X, X}, addPartitions(orders)},
		{"Produce(orders, transactional)", [4]int16{0, 0, X, X}, func(ctx context.Context, p *sclPrincipal) (int16, error) {
			return produce(ctx, p, orders, kmsg.StringPtr(p.txnID), batch(recordbatch.AttrTransactional, p.txnPID, p.txnEpoch, 0))
		}},
		{"EndTxn(commit)", [4]int16{0, 0, X, X}, endTxn},
		// kgo's own producers end to end. The client needs the topic's metadata before it
		// asks for a producer id, so anonymous, who may not describe orders, fails there.
		{"kgo idempotent produce", [4]int16{0, 0, C, T}, kgoIdempotent},
		{"kgo transaction", [4]int16{0, 0, X, X}, kgoTransaction},
	}
}
