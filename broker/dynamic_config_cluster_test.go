package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// TestDynamicBrokerConfigsCluster runs two brokers on one ZooKeeper: values stored before
// start-up are in force when Start returns (the logs opened with them), cluster defaults and
// per-broker values set through IncrementalAlterConfigs reach every broker live with the
// per-broker one winning, refusals store nothing, passwords are stored encrypted, and a
// restarted broker comes back with its values.
func TestDynamicBrokerConfigsCluster(t *testing.T) {
	chroot := testChroot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	zk, err := zkmeta.Connect(ctx, testZK(t).Connect(chroot), 6*time.Second, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	if err := zk.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	// Stored before any broker runs (kafka-configs --zookeeper style).
	if err := zk.SetBrokerConfig("<default>", map[string]string{"log.retention.ms": "123456", "log.dirs": "/ignored"}); err != nil {
		t.Fatal(err)
	}
	if err := zk.SetBrokerConfig("1", map[string]string{"log.segment.bytes": "777777"}); err != nil {
		t.Fatal(err)
	}

	secret := map[string]string{"password.encoder.secret": "cluster-secret", "password.encoder.iterations": "1024"}
	b1 := startTestBroker(t, chroot, secret)
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2"}) // no password.encoder.secret

	for _, b := range []*Broker{b1, b2} {
		cur := b.apis.config()
		if cur.Props["log.retention.ms"] != "123456" || cur.LogDirs[0] == "/ignored" {
			t.Fatalf("broker %d start-up config: retention %s dirs %v", b.ID(), cur.Props["log.retention.ms"], cur.LogDirs)
		}
	}
	if got := b1.apis.config().Props["log.segment.bytes"]; got != "777777" {
		t.Fatalf("broker 1 per-broker value at start-up: %s", got)
	}
	if got := b2.apis.config().Props["log.segment.bytes"]; got != "1073741824" {
		t.Fatalf("broker 2 took broker 1's value: %s", got)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr("PLAINTEXT"), b2.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "dyn"); err != nil {
		t.Fatal(err)
	}
	logOf := func(b *Broker) *logstore.Log {
		for _, lg := range b.logs.AllLogs() {
			if lg.TopicPartition().Topic == "dyn" {
				return lg
			}
		}
		return nil
	}
	adminWaitFor(t, 15*time.Second, "logs of topic dyn", func() bool { return logOf(b1) != nil && logOf(b2) != nil })
	if rm := logOf(b1).Config().RetentionMs; rm != 123456 {
		t.Fatalf("log opened with retention %d, want the stored default", rm)
	}

	set := func(name, value string) []kadm.AlterConfig {
		return []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(value)}}
	}
	alter := func(cfgs []kadm.AlterConfig, brokers ...int32) error {
		t.Helper()
		res, err := adm.AlterBrokerConfigs(ctx, cfgs, brokers...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				return errors.Join(r.Err, errors.New(r.ErrMessage))
			}
		}
		return nil
	}
	retention := func(b *Broker) string { return b.apis.config().Props["log.retention.ms"] }

	// Cluster default: every broker, live, down to the logs.
	if err := alter(set("log.retention.ms", "222222")); err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "the default on both brokers", func() bool {
		return retention(b1) == "222222" && retention(b2) == "222222" &&
			logOf(b1).Config().RetentionMs == 222222 && logOf(b2).Config().RetentionMs == 222222
	})
	// Per-broker wins on its broker only.
	if err := alter(set("log.retention.ms", "333333"), 1); err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "broker 1's own value", func() bool { return retention(b1) == "333333" })
	if err := alter(set("log.retention.ms", "444444")); err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "the new default on broker 2", func() bool { return retention(b2) == "444444" })
	if got := retention(b1); got != "333333" {
		t.Fatalf("broker 1 retention %s after a default change, want its own 333333", got)
	}

	// Refusals: Kafka's codes and messages, nothing stored.
	storedDefault, _ := zk.GetBrokerConfig("<default>")
	for _, tc := range []struct {
		cfgs    []kadm.AlterConfig
		brokers []int32
		code    *kerr.Error
		msg     string
	}{
		{set("log.dirs", "/x"), nil, kerr.InvalidRequest, "Cannot update these configs dynamically: Set(log.dirs)"},
		{set("listeners", "PLAINTEXT://127.0.0.1:0"), nil, kerr.InvalidRequest,
			"Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)"},
		{set("log.cleaner.threads", "lots"), nil, kerr.InvalidRequest,
			"Invalid value lots for configuration log.cleaner.threads: Not a number of type INT"},
		{set("listener.name.external.ssl.key.password", "pw"), []int32{2}, kerr.InvalidConfig,
			"Invalid config value for resource ConfigResource(type=BROKER, name='2'): Password encoder secret not configured"},
	} {
		err := alter(tc.cfgs, tc.brokers...)
		if err == nil || !errors.Is(err, tc.code) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("alter %s on %v: %v, want %s %q", tc.cfgs[0].Name, tc.brokers, err, tc.code, tc.msg)
		}
	}
	// An id names the broker that answers (AdminClient sends it there; sent elsewhere, refused).
	conn := adminDial(t, b1.Addr("PLAINTEXT"))
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "2"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "log.retention.ms", kmsg.StringPtr("1")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	r := conn.request(req, -1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Unexpected broker id, expected 1, but received 2" {
		t.Errorf("wrong broker: code %d message %v", r.ErrorCode, r.ErrorMessage)
	}
	if now, _ := zk.GetBrokerConfig("<default>"); len(now) != len(storedDefault) || now["log.retention.ms"] != "444444" {
		t.Fatalf("a refused update was stored: %v", now)
	}
	if _, err := adm.ValidateAlterBrokerConfigs(ctx, set("log.retention.ms", "1")); err != nil {
		t.Fatal(err)
	}
	if now, _ := zk.GetBrokerConfig("<default>"); now["log.retention.ms"] != "444444" {
		t.Fatalf("validate_only stored: %v", now)
	}

	// Passwords: encrypted in ZooKeeper, in clear in the broker's layers.
	const pwKey = "listener.name.external.ssl.key.password"
	if err := alter(set(pwKey, "hunter2"), 1); err != nil {
		t.Fatal(err)
	}
	stored, _ := zk.GetBrokerConfig("1")
	if v := stored[pwKey]; v == "" || strings.Contains(v, "hunter2") || !strings.Contains(v, "encryptedPassword:") {
		t.Fatalf("password stored as %q", v)
	}
	if stored["log.retention.ms"] != "333333" || stored["log.segment.bytes"] != "777777" {
		t.Fatalf("incremental alter lost other keys: %v", stored)
	}
	adminWaitFor(t, 10*time.Second, "the password on broker 1", func() bool {
		_, _, per := b1.dynConfig.Layers()
		return per[pwKey] == "hunter2"
	})

	// Restart: broker 1 comes back with its values.
	b1.Shutdown()
	b1 = startTestBroker(t, chroot, secret)
	cur := b1.apis.config()
	if cur.Props["log.retention.ms"] != "333333" || cur.Props["log.segment.bytes"] != "777777" {
		t.Fatalf("after restart: retention %s segment %s", cur.Props["log.retention.ms"], cur.Props["log.segment.bytes"])
	}
	if _, _, per := b1.dynConfig.Layers(); per[pwKey] != "hunter2" {
		t.Fatalf("password after restart: %q", per[pwKey])
	}
}
