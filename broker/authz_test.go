package broker

// Per-API authorization as KafkaApis checks it, through real clients (kgo, sarama) against
// one in-process broker with ZooKeeper. The authorizer is a small table-driven fake (the
// AclAuthorizer has its own tests); the principal comes from the client id ("as:<user>")
// through the package's test hook, User:ANONYMOUS (the broker itself) being a super user.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/internal/security"
)

// fakeGrant allows op on resources of type rt named name; a trailing '*' makes name a
// prefix, and "*" alone matches every name.
type fakeGrant struct {
	op   kmsg.ACLOperation
	rt   kmsg.ACLResourceType
	name string
}

// fakeAuthorizer allows what its grants say, with Kafka's implied operations (DESCRIBE by
// READ, WRITE, DELETE, ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS; ALL). Read-only once built.
type fakeAuthorizer struct {
	super  map[security.Principal]bool
	grants map[security.Principal][]fakeGrant
}

func (f *fakeAuthorizer) implies(g, op kmsg.ACLOperation) bool {
	if g == op || g == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		return g == kmsg.ACLOperationRead || g == kmsg.ACLOperationWrite || g == kmsg.ACLOperationDelete || g == kmsg.ACLOperationAlter
	case kmsg.ACLOperationDescribeConfigs:
		return g == kmsg.ACLOperationAlterConfigs
	}
	return false
}

func (f *fakeAuthorizer) Authorize(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if host == "" {
		return false // every request must carry the client's IP
	}
	if f.super[p] {
		return true
	}
	for _, g := range f.grants[p] {
		if g.rt != rt || !f.implies(g.op, op) {
			continue
		}
		if g.name == name || g.name == "*" || (strings.HasSuffix(g.name, "*") && strings.HasPrefix(name, strings.TrimSuffix(g.name, "*"))) {
			return true
		}
	}
	return false
}

func (f *fakeAuthorizer) AuthorizeByResourceType(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if f.super[p] {
		return true
	}
	for _, g := range f.grants[p] {
		if g.rt == rt && f.implies(g.op, op) {
			return true
		}
	}
	return false
}

const (
	rtTopic   = kmsg.ACLResourceTypeTopic
	rtGroup   = kmsg.ACLResourceTypeGroup
	rtCluster = kmsg.ACLResourceTypeCluster
	rtTxn     = kmsg.ACLResourceTypeTransactionalId
)

// authzPrincipals are the matrix's principals: who may do what.
var authzGrants = map[string][]fakeGrant{
	"nobody": nil,
	"alice": { // a transactional producer and consumer of t
		{kmsg.ACLOperationRead, rtTopic, "t"}, {kmsg.ACLOperationWrite, rtTopic, "t"},
		{kmsg.ACLOperationRead, rtGroup, "g*"}, {kmsg.ACLOperationWrite, rtTxn, "tx*"},
	},
	"describer": {
		{kmsg.ACLOperationDescribe, rtTopic, "t*"}, {kmsg.ACLOperationDescribe, rtGroup, "g*"}, {kmsg.ACLOperationDescribe, rtTxn, "tx*"},
	},
	"admin": {
		{kmsg.ACLOperationCreate, rtCluster, clusterResourceName}, {kmsg.ACLOperationAlter, rtCluster, clusterResourceName},
		{kmsg.ACLOperationDescribe, rtCluster, clusterResourceName}, {kmsg.ACLOperationAlterConfigs, rtCluster, clusterResourceName},
		{kmsg.ACLOperationIdempotentWrite, rtCluster, clusterResourceName},
		{kmsg.ACLOperationAlter, rtTopic, "t*"}, {kmsg.ACLOperationDelete, rtTopic, "t*"}, {kmsg.ACLOperationAlterConfigs, rtTopic, "t*"},
		{kmsg.ACLOperationDelete, rtGroup, "g*"},
	},
	"broker":    {{kmsg.ACLOperationClusterAction, rtCluster, clusterResourceName}},
	"grouponly": {{kmsg.ACLOperationRead, rtGroup, "g*"}, {kmsg.ACLOperationWrite, rtTxn, "tx*"}}, // no topic rights
}

// superName is the matrix's name for User:ANONYMOUS, the super user.
const superName = "super"

var authzPrincipalNames = []string{"nobody", "alice", "describer", "admin", "broker", "grouponly", superName}

type authzEnv struct {
	t    *testing.T
	b    *Broker
	addr string
	cls  map[string]*kgo.Client // default versions
	v3   map[string]*kgo.Client // AddPartitionsToTxn capped at v3, as a producer sends it
}

func startAuthzBroker(t *testing.T) *authzEnv {
	t.Helper()
	cfg := testBrokerConfig(t, testChroot(t), map[string]string{"num.partitions": "2", "controlled.shutdown.enable": "false",
		"auto.create.topics.enable": "true", "offsets.topic.num.partitions": "2", "transaction.state.log.num.partitions": "2",
		"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"})
	fa := &fakeAuthorizer{super: map[security.Principal]bool{security.Anonymous: true}, grants: map[security.Principal][]fakeGrant{}}
	for name, gs := range authzGrants {
		fa.grants[security.User(name)] = gs
	}
	setAuthzTestHook(cfg, &authzTestHook{authorizer: fa, principal: func(rc *RequestContext) (security.Principal, bool) {
		if name, ok := strings.CutPrefix(rc.ClientID, "as:"); ok && name != superName {
			return security.User(name), true
		}
		return security.Principal{}, false
	}})
	t.Cleanup(func() { authzTestHooks.Delete(cfg) })
	b, err := New(cfg, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	waitController(t, b)
	e := &authzEnv{t: t, b: b, addr: b.Addr("PLAINTEXT"), cls: map[string]*kgo.Client{}, v3: map[string]*kgo.Client{}}
	capped := kversion.Stable()
	capped.SetMaxKeyVersion(24, 3)
	for _, name := range authzPrincipalNames {
		for i, m := range []map[string]*kgo.Client{e.cls, e.v3} {
			opts := []kgo.Opt{kgo.SeedBrokers(e.addr), kgo.ClientID("as:" + name), kgo.RequestRetries(0)}
			if i == 1 {
				opts = append(opts, kgo.MaxVersions(capped))
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)
			m[name] = cl
		}
	}
	return e
}

// req sends req straight to the broker as name and fails the test on a transport error.
func (e *authzEnv) req(name string, v3 bool, req kmsg.Request) kmsg.Response {
	e.t.Helper()
	cl := e.cls[name]
	if v3 {
		cl = e.v3[name]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		e.t.Fatalf("%s as %s: %v", kmsg.NameForKey(req.Key()), name, err)
	}
	return resp
}

// setup creates topics as the super user, then waits until the group and transaction
// coordinators answer, so the matrix sees authorization results, not start-up ones.
func (e *authzEnv) setup(partitions int32, topics ...string) {
	t := e.t
	t.Helper()
	for _, topic := range topics {
		adminWaitFor(t, 20*time.Second, "create "+topic, func() bool {
			ct := kmsg.NewPtrCreateTopicsRequest()
			ctt := kmsg.NewCreateTopicsRequestTopic()
			ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = topic, partitions, 1
			ct.Topics, ct.TimeoutMillis = append(ct.Topics, ctt), 10000
			r := e.req(superName, false, ct).(*kmsg.CreateTopicsResponse)
			return r.Topics[0].ErrorCode == 0 || r.Topics[0].ErrorCode == kerr.TopicAlreadyExists.Code
		})
	}
	findCoordinator := func(typ int8, key string) {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKeys = typ, []string{key}
		e.req(superName, false, fc) // creates the internal topic on first use
	}
	adminWaitFor(t, 20*time.Second, "group coordinator", func() bool {
		findCoordinator(0, "g-ready")
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation = "g-ready", -1
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = topics[0]
		ot.Partitions = append(ot.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		oc.Topics = append(oc.Topics, ot)
		return e.req(superName, false, oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode == 0
	})
	adminWaitFor(t, 20*time.Second, "transaction coordinator", func() bool {
		findCoordinator(1, "tx-ready")
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("tx-ready"), 10000
		return e.req(superName, false, ip).(*kmsg.InitProducerIDResponse).ErrorCode == 0
	})
}

var authzCodes = map[int16]bool{kerr.TopicAuthorizationFailed.Code: true, kerr.GroupAuthorizationFailed.Code: true,
	kerr.ClusterAuthorizationFailed.Code: true, kerr.TransactionalIDAuthorizationFailed.Code: true}

// authzCase is one API of the matrix: the request, where its verdict is in the answer,
// who may, and the code everyone else gets (deny); some principals get another code.
type authzCase struct {
	name  string
	v3    bool
	req   func(principal string) kmsg.Request
	code  func(kmsg.Response) int16
	allow []string
	deny  int16
	other map[string]int16 // principals denied with a different code
}

func firstCode(codes ...int16) int16 {
	for _, c := range codes {
		if c != 0 {
			return c
		}
	}
	return 0
}

func TestAuthorizationMatrix(t *testing.T) {
	e := startAuthzBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Set-up as the super user: topic t (2 partitions) with a record; coordinators ready.
	e.setup(2, "t")
	adm := e.cls[superName]
	if err := adm.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce as super: %v", err)
	}

	T, G, C, X := kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code,
		kerr.TransactionalIDAuthorizationFailed.Code
	batch := func(attrs int16, pid int64) []byte {
		ts := time.Now().UnixMilli()
		b, err := recordbatch.Build(recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs, BaseTimestamp: ts, MaxTimestamp: ts,
			ProducerID: pid, ProducerEpoch: 0, BaseSequence: 0}, []recordbatch.Record{{Value: []byte("v")}}, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	produce := func(txnID *string, attrs int16, pid int64) func(string) kmsg.Request {
		return func(string) kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis, r.TransactionID = 1, 5000, txnID
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = 1, batch(attrs, pid)
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}
	}
	produceCode := func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode }
	fetch := func(replica int32) func(string) kmsg.Request {
		return func(string) kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.ReplicaState.ID, r.MaxBytes, r.SessionEpoch = replica, replica, 1<<20, -1
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = "t"
			if md, ok := e.b.Metadata().Topic("t"); ok {
				ft.TopicID = md.ID
			}
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
			r.Topics = append(r.Topics, ft)
			return r
		}
	}
	fetchCode := func(r kmsg.Response) int16 {
		f := r.(*kmsg.FetchResponse)
		return firstCode(f.ErrorCode, f.Topics[0].Partitions[0].ErrorCode)
	}
	metadata := func(topic func(string) string) func(string) kmsg.Request {
		return func(p string) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(topic(p))
			r.Topics, r.AllowAutoTopicCreation = append(r.Topics, mt), true
			return r
		}
	}
	metadataCode := func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode }
	txnID := kmsg.StringPtr("tx1")
	staleEpoch := int64(1)

	cases := []authzCase{
		{name: "Produce", req: produce(nil, 0, -1), code: produceCode, allow: []string{"alice"}, deny: T},
		{name: "ProduceTransactional", req: produce(txnID, 0x10, 4242), code: produceCode, allow: []string{"alice"}, deny: X,
			other: map[string]int16{"grouponly": T}},
		{name: "FetchConsumer", req: fetch(-1), code: fetchCode, allow: []string{"alice"}, deny: T},
		{name: "FetchFollower", req: fetch(2), code: fetchCode, allow: []string{"broker"}, deny: T},
		{name: "ListOffsets", req: func(string) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = "t"
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Timestamp = -1
			lt.Partitions = append(lt.Partitions, lp)
			r.Topics = append(r.Topics, lt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode },
			allow: []string{"alice", "describer", "admin"}, deny: T},
		{name: "Metadata", req: metadata(func(string) string { return "t" }), code: metadataCode,
			allow: []string{"alice", "describer", "admin"}, deny: T},
		{name: "MetadataAutoCreate", req: metadata(func(p string) string { return "t-auto-" + p }), code: metadataCode,
			allow: []string{"admin"}, deny: T},
		{name: "OffsetForLeaderEpoch", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
			ot.Topic = "t"
			op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			op.LeaderEpoch = 0
			ot.Partitions = append(ot.Partitions, op)
			r.Topics = append(r.Topics, ot)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
		},
			allow: []string{"alice", "describer", "admin", "broker"}, deny: T},
		{name: "LeaderAndIsr", req: func(string) kmsg.Request {
			r := kmsg.NewPtrLeaderAndISRRequest()
			r.ControllerID, r.BrokerEpoch = 1, staleEpoch
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.LeaderAndISRResponse).ErrorCode }, allow: []string{"broker"}, deny: C},
		{name: "StopReplica", req: func(string) kmsg.Request {
			r := kmsg.NewPtrStopReplicaRequest()
			r.ControllerID, r.BrokerEpoch = 1, staleEpoch
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.StopReplicaResponse).ErrorCode }, allow: []string{"broker"}, deny: C},
		{name: "UpdateMetadata", req: func(string) kmsg.Request {
			r := kmsg.NewPtrUpdateMetadataRequest()
			r.ControllerID, r.BrokerEpoch = 1, staleEpoch
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.UpdateMetadataResponse).ErrorCode }, allow: []string{"broker"}, deny: C},
		{name: "ControlledShutdown", req: func(string) kmsg.Request {
			r := kmsg.NewPtrControlledShutdownRequest()
			r.BrokerID, r.BrokerEpoch = 99, staleEpoch
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ControlledShutdownResponse).ErrorCode }, allow: []string{"broker"}, deny: C},
		{name: "WriteTxnMarkers", req: func(string) kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch = 4242, 0
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = "t-missing", []int32{0}
			m.Topics = append(m.Topics, mt)
			r.Markers = append(r.Markers, m)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
		},
			allow: []string{"broker"}, deny: C},
		{name: "AlterPartition", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionRequest()
			r.BrokerID, r.BrokerEpoch = 99, staleEpoch
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionResponse).ErrorCode }, allow: []string{"broker"}, deny: C},
		{name: "AllocateProducerIDs", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAllocateProducerIDsRequest()
			r.BrokerID, r.BrokerEpoch = 99, staleEpoch
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AllocateProducerIDsResponse).ErrorCode }, allow: []string{"broker"}, deny: C},
		{name: "AddPartitionsToTxnV4", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx1", 4242, 0, true
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = "t", []int32{0}
			tx.Topics = append(tx.Topics, tt)
			r.Transactions = append(r.Transactions, tx)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AddPartitionsToTxnResponse).ErrorCode }, allow: []string{"broker"}, deny: C},
		{name: "OffsetCommit", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "g1", -1
			ot := kmsg.NewOffsetCommitRequestTopic()
			ot.Topic = "t"
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			op.Offset = 1
			ot.Partitions = append(ot.Partitions, op)
			r.Topics = append(r.Topics, ot)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode },
			allow: []string{"alice"}, deny: G, other: map[string]int16{"grouponly": T}},
		{name: "OffsetFetch", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g1"
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = "t", []int32{0}
			g.Topics = append(g.Topics, gt)
			r.Groups = append(r.Groups, g)
			return r
		}, code: func(r kmsg.Response) int16 {
			g := r.(*kmsg.OffsetFetchResponse).Groups[0]
			if g.ErrorCode != 0 || len(g.Topics) == 0 {
				return g.ErrorCode
			}
			return g.Topics[0].Partitions[0].ErrorCode
		}, allow: []string{"alice", "describer", "admin"}, deny: G, other: map[string]int16{"grouponly": T}},
		{name: "FindCoordinatorGroup", req: func(string) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKeys = []string{"g1"}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode },
			allow: []string{"alice", "describer", "admin", "grouponly"}, deny: G},
		{name: "FindCoordinatorTxn", req: func(string) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType, r.CoordinatorKeys = 1, []string{"tx1"}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode },
			allow: []string{"alice", "describer", "grouponly"}, deny: X},
		{name: "JoinGroup", req: func(string) kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = "g-join", 10000, 10000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			r.Protocols = append(r.Protocols, p)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }, allow: []string{"alice", "grouponly"}, deny: G},
		{name: "Heartbeat", req: func(string) kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = "g1", "m", 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }, allow: []string{"alice", "grouponly"}, deny: G},
		{name: "LeaveGroup", req: func(string) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group = "g1"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m"
			r.Members = append(r.Members, m)
			return r
		}, code: func(r kmsg.Response) int16 {
			l := r.(*kmsg.LeaveGroupResponse)
			if l.ErrorCode != 0 || len(l.Members) == 0 {
				return l.ErrorCode
			}
			return l.Members[0].ErrorCode
		}, allow: []string{"alice", "grouponly"}, deny: G},
		{name: "SyncGroup", req: func(string) kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID, r.Generation = "g1", "m", 1
			r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }, allow: []string{"alice", "grouponly"}, deny: G},
		{name: "DescribeGroups", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"g1"}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode },
			allow: []string{"alice", "describer", "admin", "grouponly"}, deny: G},
		{name: "DeleteGroups", req: func(p string) kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"g-del-" + p}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }, allow: []string{"admin"}, deny: G},
		{name: "OffsetDelete", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "g1" // exists, Empty: committed by the OffsetCommit case
			ot := kmsg.NewOffsetDeleteRequestTopic()
			ot.Topic = "t"
			ot.Partitions = append(ot.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, ot)
			return r
		}, code: func(r kmsg.Response) int16 {
			o := r.(*kmsg.OffsetDeleteResponse)
			if o.ErrorCode != 0 || len(o.Topics) == 0 {
				return o.ErrorCode
			}
			return o.Topics[0].Partitions[0].ErrorCode
		}, allow: nil, deny: G, other: map[string]int16{"admin": T}},
		{name: "CreateTopics", req: func(p string) kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			tt := kmsg.NewCreateTopicsRequestTopic()
			tt.Topic, tt.NumPartitions, tt.ReplicationFactor = "t-new-"+p, 1, 1
			r.Topics, r.ValidateOnly, r.TimeoutMillis = append(r.Topics, tt), true, 5000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }, allow: []string{"admin"}, deny: T},
		{name: "DeleteTopics", req: func(p string) kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = kmsg.StringPtr("t-missing-" + p)
			r.Topics, r.TopicNames, r.TimeoutMillis = append(r.Topics, dt), []string{"t-missing-" + p}, 5000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }, allow: []string{"admin"}, deny: T},
		{name: "DeleteRecords", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			dt := kmsg.NewDeleteRecordsRequestTopic()
			dt.Topic = "t"
			dp := kmsg.NewDeleteRecordsRequestTopicPartition()
			dp.Partition, dp.Offset = 1, 0
			dt.Partitions = append(dt.Partitions, dp)
			r.Topics, r.TimeoutMillis = append(r.Topics, dt), 5000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode },
			allow: []string{"admin"}, deny: T},
		{name: "CreatePartitions", req: func(string) kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			ct := kmsg.NewCreatePartitionsRequestTopic()
			ct.Topic, ct.Count = "t", 1
			r.Topics, r.ValidateOnly, r.TimeoutMillis = append(r.Topics, ct), true, 5000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, allow: []string{"admin"}, deny: T},
		{name: "DescribeConfigsTopic", req: describeConfigsReq(resourceTopic, "t"), code: describeConfigsCode,
			allow: []string{"admin"}, deny: T},
		{name: "DescribeConfigsBroker", req: describeConfigsReq(resourceBroker, "1"), code: describeConfigsCode,
			allow: []string{"admin"}, deny: C},
		{name: "AlterConfigsTopic", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("100000")
			rr.Configs = append(rr.Configs, c)
			r.Resources, r.ValidateOnly = append(r.Resources, rr), true
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }, allow: []string{"admin"}, deny: T},
		{name: "IncrementalAlterConfigsTopic", req: incrementalAlterReq(kmsg.ConfigResourceTypeTopic, "t"), code: incrementalAlterCode,
			allow: []string{"admin"}, deny: T},
		{name: "IncrementalAlterConfigsBroker", req: incrementalAlterReq(kmsg.ConfigResourceTypeBroker, "1"), code: incrementalAlterCode,
			allow: []string{"admin"}, deny: C},
		{name: "DescribeLogDirs", req: func(string) kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode }, allow: []string{"admin"}, deny: C},
		{name: "AlterReplicaLogDirs", req: func(string) kmsg.Request { // ALTER on the cluster
			r := kmsg.NewPtrAlterReplicaLogDirsRequest()
			d := kmsg.NewAlterReplicaLogDirsRequestDir()
			d.Dir = "/no/such/dir"
			dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			dt.Topic, dt.Partitions = "t", []int32{0}
			d.Topics = append(d.Topics, dt)
			r.Dirs = append(r.Dirs, d)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode
		},
			allow: []string{"admin"}, deny: C},
		{name: "ElectLeaders", req: func(string) kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			et := kmsg.NewElectLeadersRequestTopic()
			et.Topic, et.Partitions = "t", []int32{0}
			r.Topics, r.TimeoutMillis = append(r.Topics, et), 5000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).ErrorCode }, allow: []string{"admin"}, deny: C},
		{name: "AlterPartitionReassignments", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			at.Topic = "t"
			at.Partitions = append(at.Partitions, kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()) // cancel p0
			r.Topics, r.TimeoutMillis = append(r.Topics, at), 5000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }, allow: []string{"admin"}, deny: C},
		{name: "ListPartitionReassignments", req: func(string) kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }, allow: []string{"admin"}, deny: C},
		{name: "InitProducerIDTransactional", req: func(string) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr("tx-init"), 10000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }, allow: []string{"alice", "grouponly"}, deny: X},
		{name: "InitProducerIDIdempotent", req: func(string) kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
			code:  func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode },
			allow: []string{"alice", "admin"}, deny: C}, // alice: WRITE on a topic stands in for IDEMPOTENT_WRITE
		{name: "AddPartitionsToTxnV3", v3: true, req: func(string) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx1", 4242, 0
			at := kmsg.NewAddPartitionsToTxnRequestTopic()
			at.Topic, at.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, at)
			return r
		}, code: func(r kmsg.Response) int16 {
			a := r.(*kmsg.AddPartitionsToTxnResponse)
			if len(a.Topics) == 0 {
				return a.ErrorCode
			}
			return a.Topics[0].Partitions[0].ErrorCode
		}, allow: []string{"alice"}, deny: X, other: map[string]int16{"grouponly": T}},
		{name: "AddOffsetsToTxn", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.Group = "tx1", 4242, "g1"
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }, allow: []string{"alice", "grouponly"}, deny: X},
		{name: "EndTxn", req: func(string) kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID = "tx1", 4242
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }, allow: []string{"alice", "grouponly"}, deny: X},
		{name: "TxnOffsetCommit", req: func(string) kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID, r.Generation = "tx1", "g1", 4242, -1
			tt := kmsg.NewTxnOffsetCommitRequestTopic()
			tt.Topic = "t"
			tt.Partitions = append(tt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
			r.Topics = append(r.Topics, tt)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		},
			allow: []string{"alice"}, deny: X, other: map[string]int16{"grouponly": T}},
		{name: "DescribeProducers", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			dt := kmsg.NewDescribeProducersRequestTopic()
			dt.Topic, dt.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, dt)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
		},
			allow: []string{"alice"}, deny: T},
		{name: "DescribeTransactions", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{"tx1"}
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
		},
			allow: []string{"alice", "describer", "grouponly"}, deny: X},
	}

	total, unexpectedAllowed := 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allowed := map[string]bool{superName: true}
			for _, p := range c.allow {
				allowed[p] = true
			}
			for _, p := range authzPrincipalNames {
				total++
				got := c.code(e.req(p, c.v3, c.req(p)))
				switch want, other := c.deny, c.other[p]; {
				case allowed[p] && authzCodes[got]:
					t.Errorf("%s as %s: denied with %v, want it allowed", c.name, p, kerr.ErrorForCode(got))
				case !allowed[p] && other != 0 && got != other:
					t.Errorf("%s as %s: got %v, want %v", c.name, p, kerr.ErrorForCode(got), kerr.ErrorForCode(other))
				case !allowed[p] && other == 0 && got != want:
					if !authzCodes[got] {
						unexpectedAllowed++
					}
					t.Errorf("%s as %s: got %v, want %v", c.name, p, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
				}
			}
		})
	}
	t.Logf("authorization matrix: %d APIs x %d principals = %d cases, %d unexpectedly allowed", len(cases), len(authzPrincipalNames),
		total, unexpectedAllowed)
}

func describeConfigsReq(rt int8, name string) func(string) kmsg.Request {
	return func(string) kmsg.Request {
		r := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceType(rt), name
		r.Resources = append(r.Resources, rr)
		return r
	}
}

func describeConfigsCode(r kmsg.Response) int16 {
	return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode
}

func incrementalAlterReq(rt kmsg.ConfigResourceType, name string) func(string) kmsg.Request {
	return func(string) kmsg.Request {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = rt, name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("100000")
		if rt == kmsg.ConfigResourceTypeBroker {
			// A valid value: Kafka validates broker configs before it authorizes them.
			c.Name, c.Value = "log.cleaner.threads", kmsg.StringPtr("2")
		}
		rr.Configs = append(rr.Configs, c)
		r.Resources, r.ValidateOnly = append(r.Resources, rr), true
		return r
	}
}

func incrementalAlterCode(r kmsg.Response) int16 {
	return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
}

// TestAuthorizationFiltersAndOperations covers the answers that filter rather than fail:
// all-topics Metadata, ListGroups, and the authorized-operations bit
// fields of Metadata, DescribeCluster and DescribeGroups.
func TestAuthorizationFiltersAndOperations(t *testing.T) {
	e := startAuthzBroker(t)
	e.setup(1, "t", "u")
	for _, g := range []string{"g1", "h1"} { // h1: no ACLs name it
		oc := kmsg.NewOffsetCommitRequest()
		oc.Group, oc.Generation = g, -1
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = "t"
		ot.Partitions = append(ot.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		oc.Topics = append(oc.Topics, ot)
		if r := e.req(superName, false, &oc).(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit %s: %v", g, kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
		}
	}
	bits := func(ops ...kmsg.ACLOperation) int32 {
		var b int32
		for _, op := range ops {
			b |= 1 << uint(op)
		}
		return b
	}
	const (
		read, write, create, del, alter, describe = kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
			kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe
		describeConfigs, alterConfigs, idempotent = kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
			kmsg.ACLOperationIdempotentWrite
	)
	allTopicOps := bits(read, write, create, describe, del, alter, describeConfigs, alterConfigs)
	adminCluster := bits(create, alter, describe, alterConfigs, describeConfigs, idempotent)

	n := 0
	check := func(what string, got, want any) {
		t.Helper()
		n++
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
	for _, tc := range []struct {
		p            string
		topics       string // all-topics Metadata, sorted names
		tOps         int32  // authorized operations on t
		clusterOps   int32  // Metadata v10 / DescribeCluster, when asked
		groups       string // ListGroups
		g1Ops        int32
		describeG1OK bool
	}{
		{"nobody", "", 0, 0, "", 0, false},
		{"alice", "t", bits(read, write, describe), 0, "g-ready g1", bits(read, describe), true},
		{"describer", "t", bits(describe), 0, "g-ready g1", bits(describe), true},
		{"admin", "t", bits(describe, del, alter, describeConfigs, alterConfigs), adminCluster, "g-ready g1 h1", bits(describe, del), true},
		{superName, "t u", allTopicOps, clusterOperations, "g-ready g1 h1", bits(read, describe, del), true},
	} {
		md := kmsg.NewMetadataRequest()
		md.Version, md.IncludeClusterAuthorizedOperations, md.IncludeTopicAuthorizedOperations = 10, true, true
		mresp := e.req(tc.p, false, &md).(*kmsg.MetadataResponse)
		var names []string
		for _, mt := range mresp.Topics {
			if mt.Topic != nil && !isInternalTopicName(*mt.Topic) {
				names = append(names, *mt.Topic)
				if *mt.Topic == "t" {
					check(tc.p+" metadata ops on t", mt.AuthorizedOperations, tc.tOps)
				}
			}
		}
		sortStrings(names)
		check(tc.p+" all-topics metadata", strings.Join(names, " "), tc.topics)
		if md.GetVersion() >= 8 && md.GetVersion() <= 10 {
			check(tc.p+" metadata cluster ops", mresp.AuthorizedOperations, tc.clusterOps)
		}
		dc := kmsg.NewDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = true
		check(tc.p+" describe cluster ops", e.req(tc.p, false, &dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations, tc.clusterOps)
		dc.IncludeClusterAuthorizedOperations = false
		check(tc.p+" describe cluster ops not asked", e.req(tc.p, false, &dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations,
			authorizedOperationsNotRequested)

		lg := kmsg.NewListGroupsRequest()
		var gs []string
		for _, g := range e.req(tc.p, false, &lg).(*kmsg.ListGroupsResponse).Groups {
			gs = append(gs, g.Group)
		}
		sortStrings(gs)
		check(tc.p+" list groups", strings.Join(gs, " "), tc.groups)

		dg := kmsg.NewDescribeGroupsRequest()
		dg.Groups, dg.IncludeAuthorizedOperations = []string{"g1"}, true
		g := e.req(tc.p, false, &dg).(*kmsg.DescribeGroupsResponse).Groups[0]
		if tc.describeG1OK {
			check(tc.p+" describe g1", g.ErrorCode, int16(0))
			check(tc.p+" g1 ops", g.AuthorizedOperations, tc.g1Ops)
		} else {
			check(tc.p+" describe g1", g.ErrorCode, kerr.GroupAuthorizationFailed.Code)
			check(tc.p+" g1 ops when denied", g.AuthorizedOperations, authorizedOperationsNotRequested)
		}
	}

	// A topic named by id the principal may not describe: the id comes back, never the name.
	tID := func() [16]byte { md, _ := e.b.Metadata().Topic("t"); return md.ID }()
	md := kmsg.NewMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.TopicID = tID
	md.Topics = append(md.Topics, mt)
	got := e.req("nobody", false, &md).(*kmsg.MetadataResponse).Topics[0]
	check("metadata by id, denied", fmt.Sprint(got.ErrorCode, got.Topic == nil, got.TopicID == tID), fmt.Sprint(kerr.TopicAuthorizationFailed.Code, true, true))
	t.Logf("filters and authorized operations: %d checks", n)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestAuthorizationClients drives the high-level clients: a kgo producer and group
// consumer as alice work end to end; as nobody they fail with Kafka's errors; sarama sees
// the same.
func TestAuthorizationClients(t *testing.T) {
	e := startAuthzBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e.setup(1, "t")

	// alice: idempotent producer (WRITE on t stands in for IDEMPOTENT_WRITE), group consumer.
	p, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ClientID("as:alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 5; i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("alice produce: %v", err)
		}
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ClientID("as:alice"), kgo.ConsumerGroup("g-alice"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := 0
	for got < 5 {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("alice consumed %d of 5", got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("alice fetch %s-%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commit: %v", err)
	}

	// nobody: the producer cannot even get a producer id (no topic WRITE anywhere).
	n, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ClientID("as:nobody"), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	err = n.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("nobody idempotent produce: %v, want an authorization error", err)
	}
	n2, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ClientID("as:nobody"), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	if err := n2.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("nobody produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// sarama: alice produces; describer (no WRITE) is refused.
	for _, tc := range []struct {
		p    string
		want error
	}{{"alice", nil}, {"describer", sarama.ErrTopicAuthorizationFailed}} {
		cfg := sarama.NewConfig()
		cfg.Version, cfg.ClientID = sarama.V3_6_0_0, "as:"+tc.p
		cfg.Producer.Return.Successes, cfg.Producer.Retry.Max = true, 0
		sp, err := sarama.NewSyncProducer([]string{e.addr}, cfg)
		if err != nil {
			t.Fatalf("sarama %s: %v", tc.p, err)
		}
		_, _, err = sp.SendMessage(&sarama.ProducerMessage{Topic: "t", Value: sarama.StringEncoder("s")})
		sp.Close()
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Errorf("sarama produce as %s: %v, want %v", tc.p, err, tc.want)
		}
	}
}
