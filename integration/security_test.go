package integration

// Security at cluster level (issue 14): a cluster whose only listener is SASL_SSL replicates
// and fails over after kill -9, ACLs created through one broker reach every broker through
// ZooKeeper's change notifications and survive a full restart, and (security_matrix_test.go)
// the authorization matrix through real SASL logins and the real AclAuthorizer. Helpers
// here are prefixed scl to keep clear of other files' names.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
	"github.com/samsa-kafka/samsa/internal/security/testcerts"
)

const (
	sclAuthorizer   = "kafka.security.authorizer.AclAuthorizer"
	sclPlainModule  = "org.apache.kafka.common.security.plain.PlainLoginModule"
	sclScramModule  = "org.apache.kafka.common.security.scram.ScramLoginModule"
	sclBrokerSecret = "broker-secret"
)

// sclPlainJAAS is a PlainLoginModule entry: the broker logs in to its peers as login, and
// the listener accepts users (name → password).
func sclPlainJAAS(login string, users map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `%s required username="%s" password="%s"`, sclPlainModule, login, users[login])
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	for _, u := range names {
		fmt.Fprintf(&b, ` user_%s="%s"`, u, users[u])
	}
	return b.String() + ";"
}

// sclClient is a kgo client seeded with addrs, closed when the test ends.
func sclClient(t testing.TB, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// sclOnSeed sends req to the client's first seed broker: a request pinned to one broker's
// address, whatever broker kgo would have chosen.
func sclOnSeed(ctx context.Context, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// sclTopicMetadata asks the client's seed broker for one topic (no auto-creation) and
// returns the topic's error code.
func sclTopicMetadata(ctx context.Context, cl *kgo.Client, topic string) (int16, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := sclOnSeed(ctx, cl, req)
	if err != nil {
		return 0, err
	}
	md := resp.(*kmsg.MetadataResponse)
	if len(md.Topics) != 1 {
		return 0, fmt.Errorf("metadata for %s: %d topics", topic, len(md.Topics))
	}
	return md.Topics[0].ErrorCode, nil
}

// sclWriteUserConfig writes /config/users/<user> in chroot as kafka-configs.sh --zookeeper
// does before any broker runs (ConfigEntityZNode, version 1).
func sclWriteUserConfig(t testing.TB, chroot, user string, cfg map[string]string) {
	t.Helper()
	conn, _, err := zk.Connect([]string{zkServer.Addr()}, 10*time.Second, zk.WithLogger(discardLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, err := json.Marshal(map[string]any{"version": 1, "config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	path := chroot + "/config/users/" + user
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		var d []byte
		if p == path {
			d = data
		}
		if _, err := conn.Create(p, d, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// TestSecuritySASLSSLFailover: three broker processes whose only listener is SASL_SSL, the
// brokers logging in to each other with SCRAM-SHA-512 as a super user and the AclAuthorizer
// on. A SCRAM client with ACLs produces with acks=all to an RF 3 topic; the partition
// leader is killed with SIGKILL; a new leader is elected within the ZooKeeper session
// timeout plus a margin, producing goes on, the killed broker comes back into the ISR over
// SASL_SSL, and every acknowledged record is read back.
func TestSecuritySASLSSLFailover(t *testing.T) {
	certs, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's bootstrap problem: brokers that log in to each other with SCRAM need their
	// credential in ZooKeeper before the first one starts.
	brokerCred, err := scramcred.New(scramcred.SHA512, sclBrokerSecret, 4096)
	if err != nil {
		t.Fatal(err)
	}
	writeCred := func(chroot string) {
		sclWriteUserConfig(t, chroot, "broker", map[string]string{scramcred.SHA512: brokerCred.String()})
	}
	c := StartCluster(t, ClusterConfig{Process: true, Listeners: []string{"SASL_SSL"}, BeforeStart: writeCred, Props: map[string]string{
		"security.inter.broker.protocol":                        "SASL_SSL",
		"sasl.enabled.mechanisms":                               "SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": fmt.Sprintf(`%s required username="broker" password="%s";`, sclScramModule, sclBrokerSecret),
		"ssl.keystore.type":                                     "PEM",
		"ssl.keystore.location":                                 certs.Broker.KeyStorePEM,
		"ssl.truststore.type":                                   "PEM",
		"ssl.truststore.location":                               certs.CA,
		"ssl.endpoint.identification.algorithm":                 "https",
		"authorizer.class.name":                                 sclAuthorizer,
		"super.users":                                           "User:broker",
		"min.insync.replicas":                                   "2",
		"unclean.leader.election.enable":                        "false",
		"auto.create.topics.enable":                             "false",
	}})
	seeds := c.Bootstrap()
	tlsOpt := kgo.DialTLSConfig(certs.ClientConfig(nil))
	asBroker := kgo.SASL(scram.Auth{User: "broker", Pass: sclBrokerSecret}.AsSha512Mechanism())
	asAlice := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The broker principal (a super user) creates the client's credential and ACLs.
	adm := kadm.NewClient(sclClient(t, seeds, tlsOpt, asBroker))
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"}})
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		t.Fatalf("alter SCRAM credential: %v", err)
	}
	const topic = "secured-failover"
	acls := kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe).
		ResourcePatternType(kadm.ACLPatternLiteral)
	idem := kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpIdempotentWrite)
	for _, b := range []*kadm.ACLBuilder{acls, idem} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("create ACLs: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create ACL %+v: %v", r, r.Err)
			}
		}
	}
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	// Credential and ACLs reach every broker by notification: alice can log in to and
	// describe the topic on each one.
	for _, b := range c.Brokers {
		cl := sclClient(t, []string{b.Addr()}, tlsOpt, asAlice)
		waitFor(t, 15*time.Second, func() error {
			code, err := sclTopicMetadata(ctx, cl, topic)
			if err == nil && code != 0 {
				err = kerr.ErrorForCode(code)
			}
			if err != nil {
				return fmt.Errorf("alice on broker %d: %w", b.ID, err)
			}
			return nil
		})
	}
	waitISR := func(n int) {
		t.Helper()
		waitFor(t, 30*time.Second, func() error {
			st, _, err := c.partitionState(topic, 0)
			if err == nil && len(st.ISR) != n {
				err = fmt.Errorf("ISR %v, want %d replicas", st.ISR, n)
			}
			return err
		})
	}
	waitISR(3)

	prod := sclClient(t, seeds, tlsOpt, asAlice, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(5*time.Second))
	var (
		mu       sync.Mutex
		acked    []string
		failed   int
		firstErr error
	)
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("rec-%07d", i)
			pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
			err := prod.ProduceSync(pctx, kgo.StringRecord(v)).FirstErr()
			pcancel()
			mu.Lock()
			if err == nil {
				acked = append(acked, v)
			} else {
				failed++
				if firstErr == nil {
					firstErr = err
				}
			}
			mu.Unlock()
		}
	}()
	stopProducer := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
	defer stopProducer()
	waitAcked := func(n int, timeout time.Duration) {
		t.Helper()
		waitFor(t, timeout, func() error {
			if got := ackedCount(); got < n {
				return fmt.Errorf("%d records acknowledged, want %d", got, n)
			}
			return nil
		})
	}
	waitAcked(200, 20*time.Second)

	st, _, err := c.partitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	old := st.Leader
	ctl := c.WaitController(5 * time.Second)
	beforeKill := ackedCount()
	killed := time.Now()
	c.Broker(old).Kill()
	t.Logf("killed leader %d (controller %d) after %d acknowledged records", old, ctl, beforeKill)
	var elected time.Duration
	var newLeader int32
	margin := 10 * time.Second
	waitFor(t, sessionTimeout+margin, func() error {
		st, _, err := c.partitionState(topic, 0)
		if err != nil {
			return err
		}
		if st.Leader == old || st.Leader < 0 {
			return fmt.Errorf("leader still %d (ISR %v)", st.Leader, st.ISR)
		}
		elected, newLeader = time.Since(killed), st.Leader
		return nil
	})
	t.Logf("broker %d leads after %v (session timeout %v)", newLeader, elected.Round(time.Millisecond), sessionTimeout)
	atElection := ackedCount()
	waitAcked(atElection+200, 30*time.Second)

	// The killed broker comes back and catches up as a follower over SASL_SSL.
	c.Broker(old).Restart()
	waitISR(3)
	stopProducer()
	mu.Lock()
	want := slices.Clone(acked)
	nFailed, first := failed, firstErr
	mu.Unlock()
	t.Logf("%d records acknowledged (%d before the kill, %d by the election), %d produce calls failed (first: %v)",
		len(want), beforeKill, atElection, nFailed, first)

	cons := sclClient(t, seeds, tlsOpt, asAlice, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	seen := map[string]int{}
	missing := func() int {
		n := 0
		for _, v := range want {
			if seen[v] == 0 {
				n++
			}
		}
		return n
	}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	for missing() > 0 && cctx.Err() == nil {
		fs := cons.PollFetches(cctx)
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch %s/%d: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	if n := missing(); n > 0 {
		t.Fatalf("%d of %d acknowledged records were not read back", n, len(want))
	}
	dups := 0
	for _, v := range want {
		if seen[v] > 1 {
			dups++
		}
	}
	if dups > 0 {
		t.Errorf("%d acknowledged records read more than once with an idempotent producer", dups)
	}
	t.Logf("all %d acknowledged records read back over SASL_SSL", len(want))
}

// sclCreateACL is a CreateAcls creation of one literal or prefixed
// topic ACL allowing principal READ from any host.
func sclCreateACL(principal, topic string, pattern kmsg.ACLResourcePatternType) kmsg.CreateACLsRequestCreation {
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, pattern
	cr.Principal, cr.Host = principal, "*"
	cr.Operation, cr.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	return cr
}

// TestSecurityACLPropagation: ACLs created through broker 0 take effect on brokers 1 and 2
// without a restart (ZooKeeper change notifications), are still in force after every
// broker was stopped and started again, and one deleted through broker 2 stops applying on
// all three.
func TestSecurityACLPropagation(t *testing.T) {
	users := map[string]string{"broker": sclBrokerSecret, "admin": "admin-secret", "bob": "bob-secret"}
	c := StartCluster(t, ClusterConfig{Listeners: []string{"SASL_PLAINTEXT"}, Props: map[string]string{
		"security.inter.broker.protocol":                      "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                             "PLAIN",
		"sasl.mechanism.inter.broker.protocol":                "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": sclPlainJAAS("broker", users),
		"authorizer.class.name":                               sclAuthorizer,
		"super.users":                                         "User:broker;User:admin",
		"auto.create.topics.enable":                           "false",
		"controlled.shutdown.enable":                          "false",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	login := func(user string) kgo.Opt {
		return kgo.SASL(plain.Auth{User: user, Pass: users[user]}.AsMechanism())
	}
	const literal, prefixed = "acl-literal", "acl-pfx-one"
	adm := kadm.NewClient(sclClient(t, c.Bootstrap(), login("admin")))
	if _, err := adm.CreateTopics(ctx, 1, 3, nil, literal, prefixed); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, func() error {
		td, err := adm.ListTopics(ctx, literal, prefixed)
		if err == nil {
			err = td.Error()
		}
		return err
	})

	// bob's view of both topics through each broker, on connections pinned to that broker.
	bobOn := func() []*kgo.Client {
		var cls []*kgo.Client
		for _, b := range c.Brokers {
			cls = append(cls, sclClient(t, []string{b.Addr()}, login("bob")))
		}
		return cls
	}
	expect := func(cls []*kgo.Client, what string, want map[string]int16, timeout time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for i, cl := range cls {
			waitFor(t, timeout, func() error {
				for topic, code := range want {
					got, err := sclTopicMetadata(ctx, cl, topic)
					if err != nil {
						return err
					}
					if got != code {
						return fmt.Errorf("%s: broker %d answers bob %v for %s, want %v", what, i, kerr.ErrorForCode(got), topic, kerr.ErrorForCode(code))
					}
				}
				return nil
			})
		}
		return time.Since(start)
	}
	denied, allowed := kerr.TopicAuthorizationFailed.Code, int16(0)
	bob := bobOn()
	expect(bob, "before the ACLs", map[string]int16{literal: denied, prefixed: denied}, 0)

	// Created through broker 0 only.
	admOn := func(id int32) *kgo.Client {
		return sclClient(t, []string{c.Broker(id).Addr()}, login("admin"))
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{
		sclCreateACL("User:bob", literal, kmsg.ACLResourcePatternTypeLiteral),
		sclCreateACL("User:bob", "acl-pfx-", kmsg.ACLResourcePatternTypePrefixed),
	}
	resp, err := sclOnSeed(ctx, admOn(0), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("creation %d through broker 0: %v %v", i, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
	took := expect(bob, "after CreateAcls on broker 0", map[string]int16{literal: allowed, prefixed: allowed}, 10*time.Second)
	t.Logf("ACLs created through broker 0 in force on all 3 brokers after %v", took.Round(time.Millisecond))
	if _, _, ok := c.ZKGet("/kafka-acl/Topic/" + literal); !ok {
		t.Errorf("no /kafka-acl/Topic/%s", literal)
	}
	if _, _, ok := c.ZKGet("/kafka-acl-extended/prefixed/Topic/acl-pfx-"); !ok {
		t.Errorf("no /kafka-acl-extended/prefixed/Topic/acl-pfx-")
	}

	// Full restart: all down, then all up.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(c.Brokers))
	for i, b := range c.Brokers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = b.terminate(30 * time.Second) }()
	}
	wg.Wait()
	for i, b := range c.Brokers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = errors.Join(errs[i], b.start()) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c.WaitController(30 * time.Second)
	t.Logf("full cluster restart in %v", time.Since(start).Round(time.Millisecond))
	bob = bobOn()
	expect(bob, "after the restart", map[string]int16{literal: allowed, prefixed: allowed}, 15*time.Second)

	// Deleted through broker 2 only: the literal ACL stops applying everywhere, the prefixed
	// one stays.
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(literal), kmsg.ACLResourcePatternTypeLiteral
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	dresp, err := sclOnSeed(ctx, admOn(2), del)
	if err != nil {
		t.Fatal(err)
	}
	if r := dresp.(*kmsg.DeleteACLsResponse).Results; len(r) != 1 || r[0].ErrorCode != 0 || len(r[0].MatchingACLs) != 1 {
		t.Fatalf("DeleteAcls through broker 2: %+v", r)
	}
	took = expect(bob, "after DeleteAcls on broker 2", map[string]int16{literal: denied, prefixed: allowed}, 10*time.Second)
	t.Logf("ACL deleted through broker 2 out of force on all 3 brokers after %v", took.Round(time.Millisecond))
}
