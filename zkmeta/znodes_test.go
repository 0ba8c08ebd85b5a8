package zkmeta

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Golden files (testdata/znodes/*.json, no trailing newline): the Kafka 3.7 examples of
// the znode JSON Kafka 3.7 writes, byte for byte. Changing one is a format change.
var (
	goldenBroker       = readGolden("broker")
	goldenTopic        = readGolden("topic")
	goldenState        = readGolden("partition_state")
	goldenConfig       = readGolden("config")
	goldenEmptyConfig  = readGolden("config_empty")
	goldenConfigChange = readGolden("config_change")
	goldenController   = readGolden("controller")
	goldenClusterID    = readGolden("cluster_id")
	goldenFeature      = readGolden("feature")
	goldenProducerIDs  = readGolden("producer_id_block")
)

func readGolden(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "znodes", name+".json"))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func goldenBrokerInfo() BrokerInfo {
	return BrokerInfo{
		ID: 1,
		Endpoints: []Endpoint{
			{ListenerName: "PLAINTEXT", Host: "b1.example", Port: 9092, SecurityProtocol: "PLAINTEXT"},
			{ListenerName: "REPL", Host: "b1.example", Port: 9093, SecurityProtocol: "SASL_SSL"},
		},
		Rack: "az1", JMXPort: -1, Timestamp: 1712345678901,
	}
}

func mustTopicID(t *testing.T, s string) [16]byte {
	t.Helper()
	id, err := ParseTopicID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestGoldenEncodings(t *testing.T) {
	topicID := mustTopicID(t, "sK4nYqZ8Rj2k8Cw0uVv6hA")
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"broker", EncodeBrokerInfo(goldenBrokerInfo()), goldenBroker},
		{"topic", EncodeTopicAssignment(TopicAssignment{TopicID: topicID,
			Partitions: map[int32][]int32{1: {2, 3, 1}, 0: {1, 2, 3}}}), goldenTopic},
		{"partition state", EncodePartitionState(PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, LeaderEpoch: 7,
			ISR: []int32{1, 3}}, ControllerEpoch: 3}), goldenState},
		{"config", EncodeConfig(map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact"}), goldenConfig},
		{"empty config", EncodeConfig(nil), goldenEmptyConfig},
		{"config change", EncodeConfigChange("topics/orders"), goldenConfigChange},
		{"controller", EncodeController(1, 1712345678901), goldenController},
		{"controller epoch", EncodeControllerEpoch(7), "7"},
		{"cluster id", EncodeClusterID("Ax9f3kKZQ3mWb8B2ZkbyBQ"), goldenClusterID},
		{"broker without rack or plaintext", EncodeBrokerInfo(BrokerInfo{ID: 2, JMXPort: -1, Timestamp: 5,
			Endpoints: []Endpoint{{ListenerName: "SSL", Host: "::1", Port: 9093, SecurityProtocol: "SSL"}}}),
			`{"features":{},"listener_security_protocol_map":{"SSL":"SSL"},"endpoints":["SSL://[::1]:9093"],` +
				`"jmx_port":-1,"host":null,"port":-1,"version":5,"timestamp":"5"}`},
		{"topic under reassignment", EncodeTopicAssignment(TopicAssignment{
			Partitions: map[int32][]int32{0: {4, 5, 1, 2}, 1: {2, 3}},
			Adding:     map[int32][]int32{0: {4, 5}, 1: {}},
			Removing:   map[int32][]int32{0: {1, 2}}}),
			`{"version":3,"partitions":{"0":[4,5,1,2],"1":[2,3]},"adding_replicas":{"0":[4,5]},"removing_replicas":{"0":[1,2]}}`},
		{"recovering state", EncodePartitionState(PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 2, LeaderEpoch: 8,
			ISR: []int32{2}, LeaderRecoveryState: LeaderRecovering}, ControllerEpoch: 4}),
			`{"controller_epoch":4,"leader":2,"version":1,"leader_epoch":8,"isr":[2],"leader_recovery_state":1}`},
		{"log dir event", EncodeLogDirEvent(1), `{"version":1,"broker":1,"event":1}`},
		{"feature", EncodeFeatureZNode(FeatureZNode{Status: FeatureStatusEnabled}), goldenFeature},
		{"producer id block", EncodeProducerIDBlock(ProducerIDBlock{BrokerID: 2, BlockStart: 3000, BlockEnd: 3999}),
			goldenProducerIDs},
		{"reassignment", EncodeReassignment([]ReassignmentEntry{{Topic: "orders", Partition: 0, Replicas: []int32{4, 5, 6}}}),
			`{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[4,5,6]}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if string(tc.got) != tc.want {
				t.Errorf("got  %s\nwant %s", tc.got, tc.want)
			}
		})
	}
}

func TestDecodeBrokerInfo(t *testing.T) {
	b, err := DecodeBrokerInfo(1, []byte(goldenBroker))
	if err != nil {
		t.Fatal(err)
	}
	want := goldenBrokerInfo()
	want.Version = 5
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("got %+v\nwant %+v", b, want)
	}
	// Older versions Kafka still reads.
	v1, err := DecodeBrokerInfo(3, []byte(`{"version":1,"host":"h","port":9092,"jmx_port":9999,"timestamp":"2233345666"}`))
	if err != nil || len(v1.Endpoints) != 1 || v1.Endpoints[0].ConnectionString() != "PLAINTEXT://h:9092" || v1.JMXPort != 9999 {
		t.Fatalf("v1: %+v %v", v1, err)
	}
	v3, err := DecodeBrokerInfo(3, []byte(`{"version":3,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1",`+
		`"endpoints":["PLAINTEXT://h:9092","SSL://h:9093"],"rack":"dc1"}`))
	if err != nil || len(v3.Endpoints) != 2 || v3.Endpoints[1].SecurityProtocol != "SSL" || v3.Rack != "dc1" {
		t.Fatalf("v3: %+v %v", v3, err)
	}
	v5, err := DecodeBrokerInfo(4, []byte(`{"features":{"f":{"min_version":1,"max_version":3}},`+
		`"listener_security_protocol_map":{"CLIENT":"SASL_PLAINTEXT"},"endpoints":["CLIENT://[::1]:9092"],`+
		`"jmx_port":-1,"host":null,"port":-1,"version":5,"timestamp":"1"}`))
	if err != nil || v5.Endpoints[0] != (Endpoint{"CLIENT", "::1", 9092, "SASL_PLAINTEXT"}) ||
		v5.Features["f"] != (SupportedVersionRange{1, 3}) {
		t.Fatalf("v5: %+v %v", v5, err)
	}
	for _, bad := range []string{`{`, `{"version":0}`, `{"version":5,"endpoints":["nope"]}`,
		`{"version":5,"endpoints":["X://h:1"],"listener_security_protocol_map":{"Y":"SSL"}}`} {
		if _, err := DecodeBrokerInfo(1, []byte(bad)); !errors.Is(err, ErrBadJSON) {
			t.Errorf("DecodeBrokerInfo(%s) = %v, want ErrBadJSON", bad, err)
		}
	}
}

func TestDecodeTopicAssignment(t *testing.T) {
	a, err := DecodeTopicAssignment([]byte(goldenTopic))
	if err != nil {
		t.Fatal(err)
	}
	if TopicIDString(a.TopicID) != "sK4nYqZ8Rj2k8Cw0uVv6hA" || !reflect.DeepEqual(a.Partitions,
		map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}}) || len(a.Adding) != 0 || len(a.Removing) != 0 {
		t.Fatalf("got %+v", a)
	}
	if got := EncodeTopicAssignment(a); string(got) != goldenTopic {
		t.Fatalf("round trip: %s", got)
	}
	// Version 1 (before reassignment fields and topic ids).
	v1, err := DecodeTopicAssignment([]byte(`{"version":1,"partitions":{"0":[1]}}`))
	if err != nil || v1.TopicID != ([16]byte{}) || !reflect.DeepEqual(v1.Partitions, map[int32][]int32{0: {1}}) {
		t.Fatalf("v1: %+v %v", v1, err)
	}
	r, err := DecodeTopicAssignment([]byte(`{"version":3,"partitions":{"0":[4,1]},"adding_replicas":{"0":[4]},"removing_replicas":{"0":[1],"9":[2]}}`))
	if err != nil || !reflect.DeepEqual(r.Adding, map[int32][]int32{0: {4}}) || !reflect.DeepEqual(r.Removing, map[int32][]int32{0: {1}}) {
		t.Fatalf("reassignment: %+v %v", r, err)
	}
}

func TestDecodeOthers(t *testing.T) {
	s, err := DecodePartitionState([]byte(goldenState), 12)
	want := PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, LeaderEpoch: 7, ISR: []int32{1, 3}, PartitionEpoch: 12}, ControllerEpoch: 3}
	if err != nil || !reflect.DeepEqual(s, want) {
		t.Fatalf("state: %+v %v", s, err)
	}
	cfg, err := DecodeConfig([]byte(goldenConfig))
	if err != nil || !reflect.DeepEqual(cfg, map[string]string{"cleanup.policy": "compact", "retention.ms": "86400000"}) {
		t.Fatalf("config: %v %v", cfg, err)
	}
	if cfg, err := DecodeConfig(nil); err != nil || len(cfg) != 0 {
		t.Fatalf("null config: %v %v", cfg, err)
	}
	typ, name, err := DecodeConfigChange([]byte(goldenConfigChange))
	if err != nil || typ != "topics" || name != "orders" {
		t.Fatalf("change v2: %s %s %v", typ, name, err)
	}
	typ, name, err = DecodeConfigChange([]byte(`{"version":1,"entity_type":"topics","entity_name":"orders"}`))
	if err != nil || typ != "topics" || name != "orders" {
		t.Fatalf("change v1: %s %s %v", typ, name, err)
	}
	if id, ke, err := DecodeController([]byte(goldenController)); err != nil || id != 1 || ke != -1 {
		t.Fatalf("controller: %d %d %v", id, ke, err)
	}
	if id, ke, err := DecodeController([]byte(`{"version":1,"brokerid":3,"timestamp":"1"}`)); err != nil || id != 3 || ke != -1 {
		t.Fatalf("controller v1: %d %d %v", id, ke, err)
	}
	if id, err := DecodeClusterID([]byte(goldenClusterID)); err != nil || id != "Ax9f3kKZQ3mWb8B2ZkbyBQ" {
		t.Fatalf("cluster id: %s %v", id, err)
	}
	if e, err := DecodeControllerEpoch([]byte("7")); err != nil || e != 7 {
		t.Fatalf("epoch: %d %v", e, err)
	}
	if len(NewClusterID()) != 22 {
		t.Fatal("cluster id length")
	}
}
