package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// persistentPaths are created by every broker at start (Kafka's ZkData.PersistentZkPaths).
var persistentPaths = []string{
	"/consumers", "/brokers/ids", "/brokers/topics", "/config/changes", "/admin/delete_topics",
	"/brokers/seqid", "/isr_change_notification", "/latest_producer_id_block",
	"/log_dir_event_notification", "/config/topics", "/config/clients", "/config/users",
	"/config/brokers", "/config/ips",
}

// TestClusterRegistration: three `samsa broker` processes register under /brokers/ids with
// Kafka's JSON, create Kafka's persistent paths and /cluster/id, and elect exactly one
// controller, which every broker reports in Metadata.
func TestClusterRegistration(t *testing.T) {
	before := time.Now()
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true})

	for _, p := range persistentPaths {
		if _, _, ok := c.ZKGet(p); !ok {
			t.Errorf("persistent path %s missing", p)
		}
	}
	if got := c.ZKChildren("/brokers/ids"); !reflect.DeepEqual(got, []string{"0", "1", "2"}) {
		t.Errorf("/brokers/ids children = %v, want [0 1 2]", got)
	}
	for _, b := range c.Brokers {
		path := fmt.Sprintf("/brokers/ids/%d", b.ID)
		data, stat, ok := c.ZKGet(path)
		if !ok {
			t.Fatalf("%s missing", path)
		}
		if stat.EphemeralOwner == 0 {
			t.Errorf("%s is not ephemeral", path)
		}
		checkJSONKeys(t, path, data, "features", "listener_security_protocol_map", "endpoints", "jmx_port", "host", "port", "version", "timestamp")
		var r brokerRegistration
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ep := "PLAINTEXT://" + b.Addr()
		if r.Version != 5 || r.Host == nil || *r.Host != "127.0.0.1" || r.Port != int(b.port) || r.JMXPort != -1 ||
			!reflect.DeepEqual(r.Endpoints, []string{ep}) ||
			!reflect.DeepEqual(r.ListenerSecurityProtocolMap, map[string]string{"PLAINTEXT": "PLAINTEXT"}) ||
			r.Features == nil || len(r.Features) != 0 || r.Rack != nil {
			t.Errorf("%s = %s, want version 5, host 127.0.0.1, port %d, jmx_port -1, endpoints [%s], PLAINTEXT map, features {}, no rack", path, data, b.port, ep)
		}
		checkTimestamp(t, path, r.Timestamp, before)
	}

	data, _, ok := c.ZKGet("/cluster/id")
	if !ok {
		t.Fatal("/cluster/id missing")
	}
	checkJSONKeys(t, "/cluster/id", data, "version", "id")
	var cid struct{ Version, ID string }
	if err := json.Unmarshal(data, &cid); err != nil || cid.Version != "1" || !isKafkaUUID(cid.ID) {
		t.Errorf(`/cluster/id = %s, want {"version":"1","id":<22-char base64url uuid>}`, data)
	}

	data, stat, ok := c.ZKGet("/controller")
	if !ok {
		t.Fatal("/controller missing")
	}
	if stat.EphemeralOwner == 0 {
		t.Error("/controller is not ephemeral")
	}
	checkJSONKeys(t, "/controller", data, "version", "brokerid", "timestamp", "kraftControllerEpoch")
	var ctl controllerZnode
	if err := json.Unmarshal(data, &ctl); err != nil {
		t.Fatal(err)
	}
	if ctl.Version != 2 || ctl.BrokerID < 0 || ctl.BrokerID > 2 || ctl.KRaftControllerEpoch == nil || *ctl.KRaftControllerEpoch != -1 {
		t.Errorf("/controller = %s, want version 2, a broker id, kraftControllerEpoch -1", data)
	}
	checkTimestamp(t, "/controller", ctl.Timestamp, before)
	// The first controller of a new cluster has epoch 1 (one election, one increment).
	if data, _, ok := c.ZKGet("/controller_epoch"); !ok || string(data) != "1" {
		t.Errorf("/controller_epoch = %q (exists %v), want \"1\"", data, ok)
	}

	// Every broker reports the same controller and all three brokers (Metadata and DescribeCluster).
	for _, b := range c.Brokers {
		waitFor(t, 20*time.Second, func() error {
			md, err := requestTo[*kmsg.MetadataResponse](t, b.Addr(), kmsg.NewPtrMetadataRequest())
			if err != nil {
				return err
			}
			var ids []int32
			for _, mb := range md.Brokers {
				ids = append(ids, mb.NodeID)
				if want := c.Broker(mb.NodeID); mb.Host != "127.0.0.1" || mb.Port != int32(want.port) {
					return fmt.Errorf("broker %d's Metadata lists broker %d at %s:%d, want %s", b.ID, mb.NodeID, mb.Host, mb.Port, want.Addr())
				}
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			if md.ControllerID != ctl.BrokerID || !reflect.DeepEqual(ids, []int32{0, 1, 2}) {
				return fmt.Errorf("broker %d's Metadata: controller %d brokers %v, want %d [0 1 2]", b.ID, md.ControllerID, ids, ctl.BrokerID)
			}
			dc, err := requestTo[*kmsg.DescribeClusterResponse](t, b.Addr(), kmsg.NewPtrDescribeClusterRequest())
			if err != nil {
				return err
			}
			if err := kerr.ErrorForCode(dc.ErrorCode); err != nil {
				return fmt.Errorf("broker %d: DescribeCluster: %w", b.ID, err)
			}
			if dc.ControllerID != ctl.BrokerID || dc.ClusterID != cid.ID {
				return fmt.Errorf("broker %d's DescribeCluster: controller %d cluster %q, want %d %q", b.ID, dc.ControllerID, dc.ClusterID, ctl.BrokerID, cid.ID)
			}
			return nil
		})
	}
}

// TestTopicAssignmentRF3: CreateTopics with replication factor 3 writes Kafka's znodes with
// Kafka's replica assignment (AdminUtils.assignReplicasToBrokers), the controller elects
// the preferred replicas, so leadership is spread evenly, and a non-controller answers
// NOT_CONTROLLER.
func TestTopicAssignmentRF3(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true})
	const topic, partitions = "rf3", 6
	createTopic(t, c, topic, partitions, 3, nil)

	path := "/brokers/topics/" + topic
	data, _, ok := c.ZKGet(path)
	if !ok {
		t.Fatalf("%s missing", path)
	}
	checkJSONKeys(t, path, data, "version", "partitions", "adding_replicas", "removing_replicas", "topic_id")
	var tz struct {
		Version          int                `json:"version"`
		Partitions       map[string][]int32 `json:"partitions"`
		AddingReplicas   map[string][]int32 `json:"adding_replicas"`
		RemovingReplicas map[string][]int32 `json:"removing_replicas"`
		TopicID          string             `json:"topic_id"`
	}
	if err := json.Unmarshal(data, &tz); err != nil {
		t.Fatal(err)
	}
	if tz.Version != 3 || len(tz.AddingReplicas) != 0 || tz.AddingReplicas == nil || len(tz.RemovingReplicas) != 0 ||
		tz.RemovingReplicas == nil || !isKafkaUUID(tz.TopicID) {
		t.Errorf("%s = %s, want version 3, empty adding/removing_replicas, a topic_id", path, data)
	}
	assignment := map[int32][]int32{}
	for k, v := range tz.Partitions {
		p, err := strconv.Atoi(k)
		if err != nil {
			t.Fatalf("%s: partition key %q", path, k)
		}
		assignment[int32(p)] = v
	}
	if !isKafkaAssignment(assignment, []int32{0, 1, 2}, partitions, 3) {
		t.Errorf("%s assignment %v is not one AdminUtils.assignReplicasToBrokers can make", path, assignment)
	}
	if data, _, ok := c.ZKGet("/config/topics/" + topic); !ok || string(data) != `{"version":1,"config":{}}` {
		t.Errorf("/config/topics/%s = %s (exists %v), want {\"version\":1,\"config\":{}}", topic, data, ok)
	}

	// Partition states: preferred leader, full ISR, leader epoch 0, controller epoch 1.
	leaders := map[int32]int{}
	for p := int32(0); p < partitions; p++ {
		path := fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, p)
		var data []byte
		waitFor(t, 20*time.Second, func() error {
			var ok bool
			if data, _, ok = c.ZKGet(path); !ok {
				return fmt.Errorf("%s missing", path)
			}
			return nil
		})
		checkJSONKeys(t, path, data, "controller_epoch", "leader", "version", "leader_epoch", "isr")
		var st struct {
			ControllerEpoch int32   `json:"controller_epoch"`
			Leader          int32   `json:"leader"`
			Version         int     `json:"version"`
			LeaderEpoch     int32   `json:"leader_epoch"`
			ISR             []int32 `json:"isr"`
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		want := assignment[p]
		if st.Version != 1 || st.ControllerEpoch != 1 || st.LeaderEpoch != 0 || len(want) == 0 || st.Leader != want[0] ||
			!reflect.DeepEqual(st.ISR, want) {
			t.Errorf("%s = %s, want version 1, controller_epoch 1, leader %v, leader_epoch 0, isr %v", path, data, want[:min(1, len(want))], want)
		}
		leaders[st.Leader]++
	}
	if !reflect.DeepEqual(leaders, map[int32]int{0: 2, 1: 2, 2: 2}) {
		t.Errorf("leaders per broker = %v, want 2 each", leaders)
	}

	// Every broker's Metadata agrees with ZooKeeper, topic id included.
	idBytes, _ := base64.RawURLEncoding.DecodeString(tz.TopicID)
	for _, b := range c.Brokers {
		waitFor(t, 20*time.Second, func() error {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			md, err := requestTo[*kmsg.MetadataResponse](t, b.Addr(), req)
			if err != nil {
				return err
			}
			if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != partitions {
				return fmt.Errorf("broker %d: Metadata for %s: %+v", b.ID, topic, md.Topics)
			}
			if got := md.Topics[0].TopicID; string(got[:]) != string(idBytes) {
				return fmt.Errorf("broker %d: topic id %x, znode says %x", b.ID, got, idBytes)
			}
			for _, mp := range md.Topics[0].Partitions {
				want := assignment[mp.Partition]
				if mp.ErrorCode != 0 || mp.Leader != want[0] || !reflect.DeepEqual(mp.Replicas, want) || !reflect.DeepEqual(mp.ISR, want) {
					return fmt.Errorf("broker %d: %s-%d: leader %d replicas %v isr %v error %d, want leader %d replicas/isr %v",
						b.ID, topic, mp.Partition, mp.Leader, mp.Replicas, mp.ISR, mp.ErrorCode, want[0], want)
				}
			}
			return nil
		})
	}

	// CreateTopics is the controller's: the others answer NOT_CONTROLLER.
	ctl := c.WaitController(10 * time.Second)
	for _, b := range c.Brokers {
		if b.ID == ctl {
			continue
		}
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "not-here", 1, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 5000
		resp, err := requestTo[*kmsg.CreateTopicsResponse](t, b.Addr(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || !errors.Is(kerr.ErrorForCode(resp.Topics[0].ErrorCode), kerr.NotController) {
			t.Errorf("CreateTopics to non-controller broker %d: %+v, want NOT_CONTROLLER", b.ID, resp.Topics)
		}
	}
}

// isKafkaAssignment says whether AdminUtils.assignReplicasToBrokersRackUnaware can produce a
// for some random start index and replica shift (both in [0, n)).
func isKafkaAssignment(a map[int32][]int32, brokers []int32, partitions int32, rf int) bool {
	n := len(brokers)
	for start := 0; start < n; start++ {
		for shift0 := 0; shift0 < n; shift0++ {
			if reflect.DeepEqual(a, kafkaAssignment(brokers, partitions, rf, start, shift0)) {
				return true
			}
		}
	}
	return false
}

// kafkaAssignment is Kafka's AdminUtils.assignReplicasToBrokersRackUnaware (brokers sorted by
// id), written out again here so the test does not trust the code it checks.
func kafkaAssignment(brokers []int32, partitions int32, rf, start, shift int) map[int32][]int32 {
	n := len(brokers)
	out := map[int32][]int32{}
	for p := 0; p < int(partitions); p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		rs := []int32{brokers[first]}
		for j := 0; j < rf-1; j++ {
			rs = append(rs, brokers[(first+1+(shift+j)%(n-1))%n])
		}
		out[int32(p)] = rs
	}
	return out
}

// checkJSONKeys fails unless data is a JSON object with exactly these keys.
func checkJSONKeys(t testing.TB, what string, data []byte, keys ...string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Errorf("%s: not a JSON object: %v: %s", what, err, data)
		return
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	want := append([]string(nil), keys...)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s has keys %v, Kafka writes %v: %s", what, got, want, data)
	}
}

// checkTimestamp: Kafka writes timestamps as a string of epoch milliseconds.
func checkTimestamp(t testing.TB, what, ts string, notBefore time.Time) {
	t.Helper()
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || ms < notBefore.Add(-time.Second).UnixMilli() || ms > time.Now().Add(time.Second).UnixMilli() {
		t.Errorf("%s: timestamp %q is not epoch milliseconds of now", what, ts)
	}
}

// isKafkaUUID: Kafka's Uuid.toString, base64url without padding (22 characters), not zero.
func isKafkaUUID(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(s) == 22 && len(b) == 16 && string(b) != string(make([]byte, 16))
}

// requestTo sends one request to the broker at addr (not wherever kgo would route it).
func requestTo[R kmsg.Response](t testing.TB, addr string, req kmsg.Request) (R, error) {
	var zero R
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.WithLogger(kgoTestLogger(t)))
	if err != nil {
		return zero, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return zero, fmt.Errorf("%s: %T: %w", addr, req, err)
	}
	r, ok := resp.(R)
	if !ok {
		return zero, fmt.Errorf("%s: got %T", addr, resp)
	}
	return r, nil
}
