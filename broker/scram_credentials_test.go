package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/sasl"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() {
	// Without ZooKeeper or a controller: Describe fails as a whole, Alter is NOT_CONTROLLER.
	requestBuilders[50] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			u.Name = "alice"
			req.Users = append(req.Users, u)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DescribeUserSCRAMCredentialsResponse)
			if resp.ErrorCode != kerr.UnknownServerError.Code || len(resp.Results) != 1 {
				t.Fatalf("DescribeUserScramCredentials response %+v", resp)
			}
		},
	}
	requestBuilders[51] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "alice", 1
			req.Deletions = append(req.Deletions, d)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.AlterUserSCRAMCredentialsResponse)
			if len(resp.Results) != 1 || resp.Results[0].User != "alice" {
				t.Fatalf("AlterUserScramCredentials response %+v", resp)
			}
			if resp.Results[0].ErrorCode != kerr.NotController.Code {
				t.Fatalf("AlterUserScramCredentials without a controller: code %d", resp.Results[0].ErrorCode)
			}
		},
	}
}

func TestScramRegistryMatchesKafka37Ranges(t *testing.T) {
	for _, key := range []int16{50, 51} {
		if minV, maxV, ok := SupportedVersions(key); !ok || minV != 0 || maxV != 0 {
			t.Errorf("key %d: [%d, %d] ok=%v, want [0, 0]", key, minV, maxV, ok)
		}
	}
}

// scramTestCluster is one broker (the controller) plus a kadm client on it.
func scramTestCluster(t *testing.T) (*Broker, *kadm.Client, *adminConn) {
	t.Helper()
	b := startTestBroker(t, testChroot(t), nil)
	waitController(t, b)
	addr := b.Addr("PLAINTEXT")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return b, kadm.NewClient(cl), adminDial(t, addr)
}

// storedCredential reads a user's credential for mechanism straight from its znode.
func storedCredential(t *testing.T, zk *zkmeta.Client, user, mechanism string) (scramcred.Credential, bool) {
	t.Helper()
	cfg, err := zk.GetUserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := cfg[mechanism]
	if !ok {
		return scramcred.Credential{}, false
	}
	c, err := scramcred.Parse(v)
	if err != nil {
		t.Fatalf("stored credential %q: %v", v, err)
	}
	return c, true
}

// verifies reports whether cred accepts password (its keys derive from it and its salt).
func verifies(t *testing.T, mechanism string, cred scramcred.Credential, password string) bool {
	t.Helper()
	want, err := scramcred.NewWithSalt(mechanism, password, cred.Salt, cred.Iterations)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(want.StoredKey, cred.StoredKey) && bytes.Equal(want.ServerKey, cred.ServerKey)
}

// secondCache is another broker's view: its own ZooKeeper session, a credential cache
// loaded at start and a config change listener feeding it, as a broker runs them.
func secondCache(t *testing.T, b *Broker) *scramCredentialCache {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	zk, err := zkmeta.Connect(ctx, b.cfg.ZookeeperConnect, 6*time.Second, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	c := newScramCredentialCache(zk, adminLogger(t))
	if err := c.load(); err != nil {
		t.Fatal(err)
	}
	l := &configChangeListener{zk: zk, logs: func() []*logstore.Log { return nil }, credentials: c,
		log: adminLogger(t), now: time.Now, lastExecuted: -1}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	return c
}

func TestAlterUserScramCredentialsWritesKafkaFormat(t *testing.T) {
	b, adm, _ := scramTestCluster(t)
	ctx := context.Background()
	other := secondCache(t, b)

	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "alice-secret"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-512"},
		{User: "CN=bob,O=Org", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range altered.Sorted() {
		if a.Err != nil {
			t.Fatalf("alter %s: %v %s", a.User, a.Err, a.ErrMessage)
		}
	}

	// The znode is ConfigEntityZNode with ScramCredentialUtils strings, keys sorted.
	data, _, err := b.zk.Get("/config/users/alice")
	if err != nil {
		t.Fatal(err)
	}
	var node struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &node); err != nil || node.Version != 1 || len(node.Config) != 2 {
		t.Fatalf("user znode %s (%v)", data, err)
	}
	if !strings.HasPrefix(string(data), `{"version":1,"config":{"SCRAM-SHA-256":"salt=`) || !strings.Contains(string(data), `,iterations=8192","SCRAM-SHA-512":"salt=`) {
		t.Errorf("user znode layout: %s", data)
	}
	for _, m := range []string{scramcred.SHA256, scramcred.SHA512} {
		c, err := scramcred.Parse(node.Config[m])
		if err != nil || c.String() != node.Config[m] {
			t.Fatalf("%s credential %q: %v", m, node.Config[m], err)
		}
	}
	c256, _ := storedCredential(t, b.zk, "alice", scramcred.SHA256)
	c512, _ := storedCredential(t, b.zk, "alice", scramcred.SHA512)
	if c256.Iterations != 8192 || !verifies(t, scramcred.SHA256, c256, "alice-secret") || verifies(t, scramcred.SHA256, c256, "wrong") {
		t.Errorf("SCRAM-SHA-256 credential does not verify alice's password: %+v", c256)
	}
	if c512.Iterations != 4096 || !verifies(t, scramcred.SHA512, c512, "alice-512") {
		t.Errorf("SCRAM-SHA-512 credential does not verify: %+v", c512)
	}
	// The principal name is sanitized in the path; the notification names the entity path.
	if ok, _, _ := b.zk.Exists("/config/users/CN%3Dbob%2CO%3DOrg"); !ok {
		t.Error("no sanitized znode for CN=bob,O=Org")
	}
	changes, err := b.zk.Children(zkmeta.ConfigChangesPath)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range changes {
		d, _, err := b.zk.Get(zkmeta.ConfigChangesPath + "/" + c)
		if err == nil {
			paths = append(paths, string(d))
		}
	}
	sort.Strings(paths)
	want := []string{`{"version":2,"entity_path":"users/CN%3Dbob%2CO%3DOrg"}`, `{"version":2,"entity_path":"users/alice"}`}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("notifications %v, want %v", paths, want)
	}

	// This broker's credentials reach the other broker's cache through the notifications.
	adminWaitFor(t, 10*time.Second, "second cache to see alice and bob", func() bool {
		a, ok1 := other.ScramCredential(scramcred.SHA256, "alice")
		_, ok2 := other.ScramCredential(scramcred.SHA256, "CN=bob,O=Org")
		return ok1 && ok2 && bytes.Equal(a.StoredKey, c256.StoredKey)
	})

	// A SCRAM server backed by the other broker's cache authenticates with them.
	srv, err := sasl.NewServer(sasl.Config{Listener: "SASL_PLAINTEXT", Credentials: other, Props: map[string]string{
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":        "SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := scramConverse(t, srv, kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()); err != nil || p != security.User("alice") {
		t.Errorf("SCRAM-SHA-256 alice: %v %v", p, err)
	}
	if _, err := scramConverse(t, srv, kscram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism()); err != nil {
		t.Errorf("SCRAM-SHA-512 alice: %v", err)
	}
	if _, err := scramConverse(t, srv, kscram.Auth{User: "CN=bob,O=Org", Pass: "bob-secret"}.AsSha256Mechanism()); err != nil {
		t.Errorf("SCRAM-SHA-256 bob: %v", err)
	}
	if _, err := scramConverse(t, srv, kscram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism()); err == nil {
		t.Error("wrong password accepted")
	}

	// Describe: every user, and named users.
	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || len(all["alice"].CredInfos) != 2 || all["alice"].CredInfos[0].Iterations != 8192 ||
		all["alice"].CredInfos[1].Mechanism != kadm.ScramSha512 || all["CN=bob,O=Org"].CredInfos[0].Iterations != 4096 {
		t.Errorf("describe all: %+v", all)
	}

	// Changing a password replaces the credential everywhere; deleting the last one removes
	// the user's znode and the other broker's entry.
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}},
		[]kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "new-secret"}}); err != nil {
		t.Fatal(err)
	}
	n256, _ := storedCredential(t, b.zk, "alice", scramcred.SHA256)
	if !verifies(t, scramcred.SHA256, n256, "new-secret") {
		t.Error("password change not stored")
	}
	if _, ok := storedCredential(t, b.zk, "alice", scramcred.SHA512); ok {
		t.Error("deleted SCRAM-SHA-512 credential still stored")
	}
	adminWaitFor(t, 10*time.Second, "second cache to follow the change", func() bool {
		a, ok := other.ScramCredential(scramcred.SHA256, "alice")
		_, ok512 := other.ScramCredential(scramcred.SHA512, "alice")
		return ok && !ok512 && bytes.Equal(a.StoredKey, n256.StoredKey)
	})
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := b.zk.Exists("/config/users/alice"); ok {
		t.Error("user znode left after deleting its last credential")
	}
	adminWaitFor(t, 10*time.Second, "second cache to drop alice", func() bool {
		_, ok := other.ScramCredential(scramcred.SHA256, "alice")
		return !ok
	})
}

// The per-user checks of ZkAdminManager, with Kafka's codes and messages.
func TestAlterUserScramCredentialsErrors(t *testing.T) {
	b, _, conn := scramTestCluster(t)
	salted := bytes.Repeat([]byte{7}, 32)
	up := func(user string, mech int8, iters int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech, iters, []byte("salt"), salted
		return u
	}
	del := func(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, mech
		return d
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	emptySalted := up("frank", 1, 4096)
	emptySalted.SaltedPassword = nil
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("", 1, 4096), up("u-unknown", 3, 4096), up("u-few", 1, 4095), up("u-many", 2, 16385),
		up("u-dup", 1, 4096), up("u-dup", 1, 8192), up("ok", 1, 4096), up("ok", 2, 16384),
		up("u-dup-del", 2, 4096), emptySalted,
	}
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("u-dup-del", 2), del("u-missing", 1), del("u-del-unknown", 0)}
	resp := conn.request(req, 0).(*kmsg.AlterUserSCRAMCredentialsResponse)
	type res struct {
		code int16
		msg  string
	}
	got := map[string]res{}
	for _, r := range resp.Results {
		if _, dup := got[r.User]; dup {
			t.Errorf("two results for %q", r.User)
		}
		m := ""
		if r.ErrorMessage != nil {
			m = *r.ErrorMessage
		}
		got[r.User] = res{r.ErrorCode, m}
	}
	want := map[string]res{
		"":              {kerr.UnacceptableCredential.Code, "Username must not be empty"},
		"u-unknown":     {kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		"u-del-unknown": {kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		"u-few":         {kerr.UnacceptableCredential.Code, "Too few iterations"},
		"u-many":        {kerr.UnacceptableCredential.Code, "Too many iterations"},
		"u-dup":         {kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
		"u-dup-del":     {kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
		"u-missing":     {kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"},
		"frank":         {kerr.UnknownServerError.Code, kerr.UnknownServerError.Description},
		"ok":            {0, ""},
	}
	if len(got) != len(want) {
		t.Errorf("results %v, want %v", got, want)
	}
	for u, w := range want {
		if got[u] != w {
			t.Errorf("user %q: %+v, want %+v", u, got[u], w)
		}
	}
	// Only the valid user was written: the credential is FromSaltedPassword of what was sent.
	c, ok := storedCredential(t, b.zk, "ok", scramcred.SHA512)
	wantCred, _ := scramcred.FromSaltedPassword(scramcred.SHA512, []byte("salt"), salted, 16384)
	if !ok || c.String() != wantCred.String() {
		t.Errorf("stored %+v, want %+v", c, wantCred)
	}
	for _, u := range []string{"u-dup", "u-dup-del", "frank", "u-few"} {
		if ok, _, _ := b.zk.Exists(zkmeta.UserConfigPath(u)); ok {
			t.Errorf("user %s was written", u)
		}
	}
}

func TestDescribeUserScramCredentialsErrors(t *testing.T) {
	b, _, conn := scramTestCluster(t)
	if _, err := b.zk.SetUserConfig("carol", map[string]string{"SCRAM-SHA-512": mustCredential(t, scramcred.SHA512, "pw", 5000)}); err != nil {
		t.Fatal(err)
	}
	// A user with only a quota override has no SCRAM credential.
	if _, err := b.zk.SetUserConfig("quota-only", map[string]string{"producer_byte_rate": "1024"}); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"dave", "carol", "", "erin", "erin", "quota-only", "carol"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		req.Users = append(req.Users, u)
	}
	resp := conn.request(req, 0).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("top-level error %d", resp.ErrorCode)
	}
	var got []string
	for _, r := range resp.Results {
		s := r.User + ":" + kerr.ErrorForCode(r.ErrorCode).Error()
		if r.ErrorCode == 0 {
			s = r.User + ":ok"
		}
		if r.ErrorMessage != nil {
			s += ":" + *r.ErrorMessage
		}
		for _, ci := range r.CredentialInfos {
			s += ":" + scramMechanismName(ci.Mechanism) + "/" + strconv.Itoa(int(ci.Iterations))
		}
		got = append(got, s)
	}
	want := []string{
		"dave:RESOURCE_NOT_FOUND: A request illegally referred to a resource that does not exist.:Attempt to describe a user credential that does not exist: dave",
		"carol:DUPLICATE_RESOURCE: A request illegally referred to the same resource twice.:Cannot describe SCRAM credentials for the same user twice in a single request: carol",
		":RESOURCE_NOT_FOUND: A request illegally referred to a resource that does not exist.:Username must not be empty",
		"erin:DUPLICATE_RESOURCE: A request illegally referred to the same resource twice.:Cannot describe SCRAM credentials for the same user twice in a single request: erin",
		"quota-only:RESOURCE_NOT_FOUND: A request illegally referred to a resource that does not exist.:Attempt to describe a user credential that does not exist: quota-only",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("results\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Describing everyone lists only users with credentials.
	req.Users = nil
	resp = conn.request(req, 0).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if resp.ErrorCode != 0 || len(resp.Results) != 1 || resp.Results[0].User != "carol" ||
		len(resp.Results[0].CredentialInfos) != 1 || resp.Results[0].CredentialInfos[0].Iterations != 5000 ||
		resp.Results[0].CredentialInfos[0].Mechanism != 2 {
		t.Errorf("describe all: %+v", resp)
	}
}

// scramDenyAll is an authorizer that refuses everything, to see the cluster checks.
type scramDenyAll struct{}

func (scramDenyAll) Authorize(security.Principal, string, kmsg.ACLOperation, kmsg.ACLResourceType, string) bool {
	return false
}
func (scramDenyAll) AuthorizeByResourceType(security.Principal, string, kmsg.ACLOperation, kmsg.ACLResourceType) bool {
	return false
}

func TestScramCredentialsAPIsNeedClusterPermissions(t *testing.T) {
	b, _, conn := scramTestCluster(t)
	setAuthzTestHook(b.cfg, &authzTestHook{authorizer: scramDenyAll{}})
	d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	dr := conn.request(d, 0).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if dr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("describe: %+v", dr)
	}
	a := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "x", 1, 4096, []byte("s"), []byte("p")
	a.Upsertions = append(a.Upsertions, u, u)
	ar := conn.request(a, 0).(*kmsg.AlterUserSCRAMCredentialsResponse)
	if len(ar.Results) != 1 || ar.Results[0].User != "x" || ar.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alter: %+v", ar)
	}
	if ok, _, _ := b.zk.Exists(zkmeta.UserConfigPath("x")); ok {
		t.Error("unauthorized alter was written")
	}
}

func mustCredential(t *testing.T, mechanism, password string, iterations int) string {
	t.Helper()
	c, err := scramcred.New(mechanism, password, iterations)
	if err != nil {
		t.Fatal(err)
	}
	return c.String()
}

// The start-up load reads every user, skips <default> and drops what does not parse.
func TestScramCredentialCacheLoad(t *testing.T) {
	b := startTestBroker(t, testChroot(t), nil)
	good := mustCredential(t, scramcred.SHA256, "pw", 4096)
	for user, cfg := range map[string]map[string]string{
		"alice":                    {"SCRAM-SHA-256": good, "SCRAM-SHA-512": "not a credential"},
		"user with spaces":         {"SCRAM-SHA-512": mustCredential(t, scramcred.SHA512, "pw", 4096)},
		zkmeta.ConfigEntityDefault: {"producer_byte_rate": "1"},
	} {
		if _, err := b.zk.SetUserConfig(user, cfg); err != nil {
			t.Fatal(err)
		}
	}
	c := newScramCredentialCache(b.zk, adminLogger(t))
	if err := c.load(); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.ScramCredential(scramcred.SHA256, "alice"); !ok || got.String() != good {
		t.Errorf("alice SHA-256: %v %v", got, ok)
	}
	if _, ok := c.ScramCredential(scramcred.SHA512, "alice"); ok {
		t.Error("unparsable credential cached")
	}
	if _, ok := c.ScramCredential(scramcred.SHA512, "user with spaces"); !ok {
		t.Error("desanitized user missing")
	}
	if _, ok := c.ScramCredential("PLAIN", "alice"); ok {
		t.Error("credential for a non-SCRAM mechanism")
	}
	// Quota-only paths are ignored by the change handler.
	if err := c.userConfigChanged("alice/clients/app"); err != nil {
		t.Error(err)
	}
	if err := c.userConfigChanged("bad%zz"); err == nil {
		t.Error("malformed entity path accepted")
	}
}

// scramConverse drives a franz-go client mechanism against a server session, message by
// message, as SaslAuthenticate carries them; it returns the authenticated principal.
func scramConverse(t *testing.T, srv *sasl.Server, mech kgosasl.Mechanism) (security.Principal, error) {
	t.Helper()
	sess, err := srv.Start(mech.Name())
	if err != nil {
		t.Fatal(err)
	}
	cs, msg, err := mech.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		reply, done, err := sess.Step(msg)
		if err != nil {
			return security.Principal{}, err
		}
		cdone, next, err := cs.Challenge(reply)
		if err != nil {
			return security.Principal{}, err
		}
		if done && cdone {
			return sess.Principal(), nil
		}
		msg = next
	}
	t.Fatal("SCRAM exchange did not finish")
	return security.Principal{}, nil
}

// End to end: credentials written through the API let a client log in on a SASL listener
// once the notification reached the cache, and stop doing so once deleted.
func TestScramLoginWithCredentialsFromTheAPI(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{
		"listeners":                  "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name": "PLAINTEXT",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
	})
	waitController(t, b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	login := func(password string) error {
		sc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("SASL_PLAINTEXT")),
			kgo.SASL(kscram.Auth{User: "svc user", Pass: password}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return sc.Ping(pctx)
	}
	if err := login("pw"); err == nil {
		t.Fatal("login before the user exists")
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "svc user", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "login with the new credential", func() bool { return login("pw") == nil })
	if err := login("not-pw"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "svc user", Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "login refused after deletion", func() bool { return errors.Is(login("pw"), kerr.SaslAuthenticationFailed) })
}
