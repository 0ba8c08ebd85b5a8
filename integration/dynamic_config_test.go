package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDynamicBrokerConfigs (issue 15): a cluster default stored before start-up is in force
// as soon as the brokers serve; a default set with `samsa configs` and per-broker values set
// by sarama (AlterConfigs) and kadm (IncrementalAlterConfigs) reach every broker live, the
// per-broker value winning where it is set; bad values and static keys are refused and
// store nothing; everything holds across a full cluster restart.
func TestDynamicBrokerConfigs(t *testing.T) {
	const (
		defRetention = "3600000"   // /config/brokers/<default>, written before start
		b1Retention  = "7200000"   // /config/brokers/1 through sarama
		defSegment   = "268435456" // /config/brokers/<default> through samsa configs
		b1Segment    = "134217728" // /config/brokers/1 through kadm
	)
	c := StartCluster(t, ClusterConfig{Process: false, BeforeStart: func(chroot string) {
		dynWriteZnode(t, chroot+"/config/brokers/<default>", map[string]string{"log.retention.ms": defRetention})
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// 1. No polling: a broker applies the stored default before it registers.
	for _, b := range c.Brokers {
		dynExpect(t, b, "log.retention.ms", defRetention,
			"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms="+defRetention, "DEFAULT_CONFIG:log.retention.hours=168")
	}
	const topic = "dyn-defaults"
	createTopic(t, c, topic, 1, 3, nil)
	for _, b := range c.Brokers {
		got := dynDescribeOne(t, b, kmsg.ConfigResourceTypeTopic, topic, "retention.ms")
		want := dynFormat(defRetention, "DYNAMIC_DEFAULT_BROKER_CONFIG",
			"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms="+defRetention, "DEFAULT_CONFIG:log.retention.hours=168")
		if got != want {
			t.Errorf("broker %d: topic %s retention.ms = %s\nwant %s", b.ID, topic, got, want)
		}
	}

	// 2. Three clients, three paths into ZooKeeper; the brokers pick them up from the
	// change notifications, without a restart.
	bs := strings.Join(c.Bootstrap(), ",")
	out, err := samsaCmd(t, "", "configs", "--bootstrap-server", bs, "--alter", "--entity-type", "brokers",
		"--entity-default", "--add-config", "log.segment.bytes="+defSegment)
	if err != nil || !strings.Contains(out, "Completed updating default config for brokers in the cluster.") {
		t.Fatalf("samsa configs --alter --entity-default: %v\n%s", err, out)
	}

	scfg := sarama.NewConfig()
	scfg.Version = sarama.V3_7_0_0
	sadm, err := sarama.NewClusterAdmin(c.Bootstrap(), scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sadm.Close()
	if err := sadm.AlterConfig(sarama.BrokerResource, "1", map[string]*string{"log.retention.ms": kmsg.StringPtr(b1Retention)}, false); err != nil {
		t.Fatalf("sarama AlterConfig broker 1: %v", err)
	}
	// After sarama: AlterConfigs replaces the whole entity, IncrementalAlterConfigs adds to it.
	kadmc := adminClient(t, c)
	if resp, err := kadmc.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.segment.bytes", Value: kmsg.StringPtr(b1Segment)}}, 1); err != nil || resp[0].Err != nil {
		t.Fatalf("kadm AlterBrokerConfigs broker 1: %v %+v", err, resp)
	}

	// Kafka's synonym order: per-broker, cluster default, static, Kafka's default.
	wantRetention := map[int32][]string{}
	wantSegment := map[int32][]string{}
	for _, b := range c.Brokers {
		wantRetention[b.ID] = []string{defRetention, "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=" + defRetention, "DEFAULT_CONFIG:log.retention.hours=168"}
		wantSegment[b.ID] = []string{defSegment, "DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=" + defSegment, "DEFAULT_CONFIG:log.segment.bytes=1073741824"}
	}
	wantRetention[1] = append([]string{b1Retention, "DYNAMIC_BROKER_CONFIG:log.retention.ms=" + b1Retention}, wantRetention[1][1:]...)
	wantSegment[1] = append([]string{b1Segment, "DYNAMIC_BROKER_CONFIG:log.segment.bytes=" + b1Segment}, wantSegment[1][1:]...)
	checkAll := func() error {
		var errs []error
		for _, b := range c.Brokers {
			errs = append(errs, dynCheck(t, b, "log.retention.ms", wantRetention[b.ID][0], wantRetention[b.ID][1:]...))
			errs = append(errs, dynCheck(t, b, "log.segment.bytes", wantSegment[b.ID][0], wantSegment[b.ID][1:]...))
		}
		return errors.Join(errs...)
	}
	start := time.Now()
	waitFor(t, 5*time.Second, checkAll)
	t.Logf("every broker reports the new values %v after the last alter", time.Since(start).Round(time.Millisecond))
	// A topic without overrides follows its broker: broker 1 answers with its own value.
	got := dynDescribeOne(t, c.Broker(1), kmsg.ConfigResourceTypeTopic, topic, "retention.ms")
	if want := dynFormat(b1Retention, "DYNAMIC_BROKER_CONFIG", append([]string{"DYNAMIC_BROKER_CONFIG:log.retention.ms=" + b1Retention}, wantRetention[1][2:]...)...); got != want {
		t.Errorf("broker 1: topic %s retention.ms = %s\nwant %s", topic, got, want)
	}
	wantDefault := map[string]string{"log.retention.ms": defRetention, "log.segment.bytes": defSegment}
	wantB1 := map[string]string{"log.retention.ms": b1Retention, "log.segment.bytes": b1Segment}
	dynExpectZnode(t, c, "/config/brokers/<default>", wantDefault)
	dynExpectZnode(t, c, "/config/brokers/1", wantB1)

	// 3. Refusals: INVALID_REQUEST with Kafka's messages, nothing written, nothing notified.
	defData, defStat, _ := c.ZKGet("/config/brokers/<default>")
	b1Data, b1Stat, _ := c.ZKGet("/config/brokers/1")
	changes := c.ZKChildren("/config/changes")

	out, err = samsaCmd(t, "", "configs", "--bootstrap-server", bs, "--alter", "--entity-type", "brokers",
		"--entity-default", "--add-config", "log.cleaner.threads=lots")
	if err == nil || !strings.Contains(out, "Invalid value lots for configuration log.cleaner.threads: Not a number of type INT") ||
		strings.Contains(out, "Completed updating") {
		t.Errorf("samsa configs with log.cleaner.threads=lots: err %v, output %q; want a failure with Kafka's message", err, out)
	}
	err = sadm.AlterConfig(sarama.BrokerResource, "1", map[string]*string{"broker.id": kmsg.StringPtr("7")}, false)
	var serr *sarama.AlterConfigError
	if !errors.As(err, &serr) || serr.Err != sarama.ErrInvalidRequest || serr.ErrMsg != "Cannot update these configs dynamically: Set(broker.id)" {
		t.Errorf("sarama AlterConfig broker.id=7: %v; want INVALID_REQUEST \"Cannot update these configs dynamically: Set(broker.id)\"", err)
	}
	resp, err := kadmc.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.dirs", Value: kmsg.StringPtr("/elsewhere")}}, 1)
	if err != nil || len(resp) != 1 || !errors.Is(resp[0].Err, kerr.InvalidRequest) || resp[0].ErrMessage != "Cannot update these configs dynamically: Set(log.dirs)" {
		t.Errorf("kadm AlterBrokerConfigs log.dirs: %v %+v; want INVALID_REQUEST \"Cannot update these configs dynamically: Set(log.dirs)\"", err, resp)
	}
	resp, err = kadmc.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.cleaner.threads", Value: kmsg.StringPtr("lots")}}, 1)
	if err != nil || len(resp) != 1 || !errors.Is(resp[0].Err, kerr.InvalidRequest) ||
		resp[0].ErrMessage != "Invalid value lots for configuration log.cleaner.threads: Not a number of type INT" {
		t.Errorf("kadm AlterBrokerConfigs log.cleaner.threads=lots: %v %+v; want INVALID_REQUEST with Kafka's message", err, resp)
	}
	if d, s, _ := c.ZKGet("/config/brokers/<default>"); string(d) != string(defData) || s.Version != defStat.Version {
		t.Errorf("/config/brokers/<default> changed by a refused alter: %s (version %d), was %s (version %d)", d, s.Version, defData, defStat.Version)
	}
	if d, s, _ := c.ZKGet("/config/brokers/1"); string(d) != string(b1Data) || s.Version != b1Stat.Version {
		t.Errorf("/config/brokers/1 changed by a refused alter: %s (version %d), was %s (version %d)", d, s.Version, b1Data, b1Stat.Version)
	}
	if now := c.ZKChildren("/config/changes"); strings.Join(now, ",") != strings.Join(changes, ",") {
		t.Errorf("refused alters wrote change notifications: /config/changes %v, was %v", now, changes)
	}
	for _, b := range c.Brokers {
		dynExpect(t, b, "log.cleaner.threads", "1", "DEFAULT_CONFIG:log.cleaner.threads=1")
	}

	// 4. Stop every broker, start them again: the values come back from ZooKeeper before
	// the brokers serve.
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
	if err := checkAll(); err != nil {
		t.Errorf("after a full restart: %v", err)
	}
	dynExpectZnode(t, c, "/config/brokers/<default>", wantDefault)
	dynExpectZnode(t, c, "/config/brokers/1", wantB1)
}

// dynWriteZnode stores a config entity as Kafka's AdminZkClient does, creating the parents.
func dynWriteZnode(t testing.TB, path string, cfg map[string]string) {
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

// dynExpectZnode checks an entity's stored configs.
func dynExpectZnode(t testing.TB, c *Cluster, path string, want map[string]string) {
	t.Helper()
	data, _, ok := c.ZKGet(path)
	var z struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}
	if !ok || json.Unmarshal(data, &z) != nil || z.Version != 1 || fmt.Sprint(z.Config) != fmt.Sprint(want) {
		t.Errorf("%s = %q; want version 1 with config %v", path, data, want)
	}
}

// dynDescribe sends DescribeConfigs (with synonyms) for one resource to broker b's own
// address and returns the named key's entry as dynFormat prints it.
func dynDescribe(t testing.TB, b *Broker, typ kmsg.ConfigResourceType, name, key string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.WithLogger(kgoTestLogger(t)))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, []string{key}
	req.Resources = append(req.Resources, r)
	kresp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return "", fmt.Errorf("broker %d: DescribeConfigs: %w", b.ID, err)
	}
	resp := kresp.(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 {
		return "", fmt.Errorf("broker %d: %d resources in the answer", b.ID, len(resp.Resources))
	}
	res := resp.Resources[0]
	if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
		return "", fmt.Errorf("broker %d: DescribeConfigs %s: %v: %s", b.ID, name, err, dynValue(res.ErrorMessage))
	}
	for _, e := range res.Configs {
		if e.Name != key {
			continue
		}
		var syns []string
		for _, s := range e.ConfigSynonyms {
			syns = append(syns, fmt.Sprintf("%s:%s=%s", s.Source, s.Name, dynValue(s.Value)))
		}
		return dynFormat(dynValue(e.Value), e.Source.String(), syns...), nil
	}
	return "", fmt.Errorf("broker %d: no %s in the answer", b.ID, key)
}

func dynDescribeOne(t testing.TB, b *Broker, typ kmsg.ConfigResourceType, name, key string) string {
	t.Helper()
	got, err := dynDescribe(t, b, typ, name, key)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func dynValue(v *string) string {
	if v == nil {
		return "null"
	}
	return *v
}

func dynFormat(value, source string, synonyms ...string) string {
	return fmt.Sprintf("value=%s source=%s synonyms=[%s]", value, source, strings.Join(synonyms, ", "))
}

// dynCheck compares broker b's own view of key with the value and synonyms wanted; the
// source is the first synonym's, as in Kafka.
func dynCheck(t testing.TB, b *Broker, key, value string, synonyms ...string) error {
	got, err := dynDescribe(t, b, kmsg.ConfigResourceTypeBroker, fmt.Sprint(b.ID), key)
	if err != nil {
		return err
	}
	source, _, _ := strings.Cut(synonyms[0], ":")
	if want := dynFormat(value, source, synonyms...); got != want {
		return fmt.Errorf("broker %d %s: %s\nwant %s", b.ID, key, got, want)
	}
	return nil
}

func dynExpect(t testing.TB, b *Broker, key, value string, synonyms ...string) {
	t.Helper()
	if err := dynCheck(t, b, key, value, synonyms...); err != nil {
		t.Error(err)
	}
}
