package zkmeta

// ZkData: one section per znode with its path and its JSON exactly as Kafka 3.7 writes it
// (core/src/main/scala/kafka/zk/ZkData.scala). Kafka writes through Jackson from Scala maps,
// so key order follows the map implementation; we pin the order Kafka's own output shows
// (the znode examples of Kafka's ZooKeeper-mode documentation) and readers never depend on
// order.

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// Paths (relative to the chroot).
const (
	ControllerPath               = "/controller"
	ControllerEpochPath          = "/controller_epoch"
	BrokersPath                  = "/brokers"
	BrokerIDsPath                = "/brokers/ids"
	BrokerSeqIDPath              = "/brokers/seqid"
	TopicsPath                   = "/brokers/topics"
	ConfigPath                   = "/config"
	ConfigChangesPath            = "/config/changes"
	AdminPath                    = "/admin"
	DeleteTopicsPath             = "/admin/delete_topics"
	ReassignPartitionsPath       = "/admin/reassign_partitions"
	PreferredReplicaElectionPath = "/admin/preferred_replica_election"
	IsrChangeNotificationPath    = "/isr_change_notification"
	LogDirEventNotificationPath  = "/log_dir_event_notification"
	LatestProducerIDBlockPath    = "/latest_producer_id_block"
	ClusterPath                  = "/cluster"
	ClusterIDPath                = "/cluster/id"
	ConsumersPath                = "/consumers"
	FeaturePath                  = "/feature"

	// ConfigChangePrefix is the sequential child name prefix under /config/changes.
	ConfigChangePrefix = "config_change_"
	// IsrChangePrefix and LogDirEventPrefix name the sequential notification children.
	IsrChangePrefix   = "isr_change_"
	LogDirEventPrefix = "log_dir_event_"
)

// Config entity types (ConfigType in Kafka).
const (
	ConfigTypeTopic  = "topics"
	ConfigTypeClient = "clients"
	ConfigTypeUser   = "users"
	ConfigTypeBroker = "brokers"
	ConfigTypeIP     = "ips"
)

// PersistentPaths are created at every broker start (ZkData.PersistentZkPaths).
var PersistentPaths = []string{
	ConsumersPath,
	BrokerIDsPath,
	TopicsPath,
	ConfigChangesPath,
	DeleteTopicsPath,
	BrokerSeqIDPath,
	IsrChangeNotificationPath,
	LatestProducerIDBlockPath,
	LogDirEventNotificationPath,
	ConfigPath + "/" + ConfigTypeTopic,
	ConfigPath + "/" + ConfigTypeClient,
	ConfigPath + "/" + ConfigTypeUser,
	ConfigPath + "/" + ConfigTypeBroker,
	ConfigPath + "/" + ConfigTypeIP,
}

// BrokerIDPath is /brokers/ids/<id>.
func BrokerIDPath(id int32) string { return BrokerIDsPath + "/" + strconv.Itoa(int(id)) }

// TopicPath is /brokers/topics/<topic>.
func TopicPath(topic string) string { return TopicsPath + "/" + topic }

// TopicPartitionsPath is /brokers/topics/<topic>/partitions.
func TopicPartitionsPath(topic string) string { return TopicPath(topic) + "/partitions" }

// TopicPartitionPath is /brokers/topics/<topic>/partitions/<p>.
func TopicPartitionPath(topic string, p int32) string {
	return TopicPartitionsPath(topic) + "/" + strconv.Itoa(int(p))
}

// PartitionStatePath is /brokers/topics/<topic>/partitions/<p>/state.
func PartitionStatePath(topic string, p int32) string { return TopicPartitionPath(topic, p) + "/state" }

// ConfigEntityPath is /config/<type>/<name>.
func ConfigEntityPath(entityType, name string) string {
	return ConfigPath + "/" + entityType + "/" + name
}

// TopicConfigPath is /config/topics/<topic>.
func TopicConfigPath(topic string) string { return ConfigEntityPath(ConfigTypeTopic, topic) }

// DeleteTopicPath is /admin/delete_topics/<topic>.
func DeleteTopicPath(topic string) string { return DeleteTopicsPath + "/" + topic }

// ErrBadJSON wraps every decode failure.
var ErrBadJSON = errors.New("zkmeta: malformed znode data")

// ---- Uuids (org.apache.kafka.common.Uuid: URL-safe base64 without padding) ----

// TopicIDString renders a topic id as Kafka's Uuid.toString does.
func TopicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID parses Kafka's Uuid string form.
func ParseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("%w: bad uuid %q", ErrBadJSON, s)
	}
	copy(id[:], b)
	return id, nil
}

// NewUUID returns a random Uuid as Kafka's Uuid.randomUuid: never the zero Uuid (reserved)
// nor one whose string starts with '-' (Kafka avoids those for command lines).
func NewUUID() [16]byte {
	for {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			panic("zkmeta: crypto/rand: " + err.Error())
		}
		// version 4, IETF variant, as java.util.UUID.randomUUID.
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id != ([16]byte{}) && !strings.HasPrefix(TopicIDString(id), "-") {
			return id
		}
	}
}

// NewClusterID returns a fresh cluster id (22 characters), as Kafka's CoreUtils.generateUuidAsBase64.
func NewClusterID() string { return TopicIDString(NewUUID()) }

// ---- small JSON writer that keeps Kafka's key order ----

type jsonObj struct {
	b     bytes.Buffer
	first bool
}

func newObj() *jsonObj { o := &jsonObj{first: true}; o.b.WriteByte('{'); return o }

func (o *jsonObj) key(k string) {
	if !o.first {
		o.b.WriteByte(',')
	}
	o.first = false
	writeString(&o.b, k)
	o.b.WriteByte(':')
}

func (o *jsonObj) str(k, v string)        { o.key(k); writeString(&o.b, v) }
func (o *jsonObj) num(k string, v int64)  { o.key(k); o.b.WriteString(strconv.FormatInt(v, 10)) }
func (o *jsonObj) raw(k string, v []byte) { o.key(k); o.b.Write(v) }
func (o *jsonObj) null(k string)          { o.key(k); o.b.WriteString("null") }
func (o *jsonObj) bytes() []byte          { o.b.WriteByte('}'); return o.b.Bytes() }

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // never fails for a string
	b.Write(enc)
}

func int32List(l []int32) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(v)))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// partitionMap writes {"0":[1,2],"1":[2,1]} with partitions in numeric order.
func partitionMap(m map[int32][]int32) []byte {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	o := newObj()
	for _, p := range ps {
		o.raw(strconv.Itoa(int(p)), int32List(m[p]))
	}
	return o.bytes()
}

// ---- /brokers/ids/<id> (BrokerIdZNode, version 5) ----

// Endpoint is one advertised listener.
type Endpoint struct {
	ListenerName     string
	Host             string
	Port             int32
	SecurityProtocol string
}

// ConnectionString is Kafka's EndPoint.connectionString: NAME://host:port, IPv6 in brackets.
func (e Endpoint) ConnectionString() string {
	if e.Host == "" {
		return e.ListenerName + "://:" + strconv.Itoa(int(e.Port))
	}
	return e.ListenerName + "://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// SupportedVersionRange is one entry of a broker's "features" map.
type SupportedVersionRange struct {
	MinVersion int16 `json:"min_version"`
	MaxVersion int16 `json:"max_version"`
}

// BrokerInfoVersion is the registration JSON version Kafka 3.7 writes (IBP >= 2.7).
const BrokerInfoVersion = 5

// BrokerInfo is a broker registration.
type BrokerInfo struct {
	ID        int32
	Endpoints []Endpoint // advertised listeners, in configuration order
	Rack      string     // "" = no broker.rack
	JMXPort   int32      // -1 = none
	Timestamp int64      // registration time, epoch ms; 0 = now (RegisterBroker fills it)
	Features  map[string]SupportedVersionRange
	Version   int32 // JSON version read back; written as 5

	// Epoch is the czxid of the znode (Kafka's broker epoch); filled by RegisterBroker and GetBroker.
	Epoch int64
}

// Endpoint returns the endpoint of a listener.
func (b BrokerInfo) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.ListenerName == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// EncodeBrokerInfo is BrokerIdZNode.encode at version 5.
func EncodeBrokerInfo(b BrokerInfo) []byte {
	o := newObj()
	// features
	feats := newObj()
	names := make([]string, 0, len(b.Features))
	for n := range b.Features {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := newObj()
		f.num("min_version", int64(b.Features[n].MinVersion))
		f.num("max_version", int64(b.Features[n].MaxVersion))
		feats.raw(n, f.bytes())
	}
	o.raw("features", feats.bytes())
	// listener_security_protocol_map
	lsp := newObj()
	seen := map[string]bool{}
	for _, e := range b.Endpoints {
		if !seen[e.ListenerName] {
			seen[e.ListenerName] = true
			lsp.str(e.ListenerName, e.SecurityProtocol)
		}
	}
	o.raw("listener_security_protocol_map", lsp.bytes())
	// endpoints
	var eps bytes.Buffer
	eps.WriteByte('[')
	for i, e := range b.Endpoints {
		if i > 0 {
			eps.WriteByte(',')
		}
		writeString(&eps, e.ConnectionString())
	}
	eps.WriteByte(']')
	o.raw("endpoints", eps.Bytes())
	o.num("jmx_port", int64(b.JMXPort))
	// host/port: the first PLAINTEXT endpoint, for clients older than 0.9.
	host, port := "", int32(-1)
	hasPlain := false
	for _, e := range b.Endpoints {
		if e.SecurityProtocol == "PLAINTEXT" {
			host, port, hasPlain = e.Host, e.Port, true
			break
		}
	}
	if hasPlain && host != "" {
		o.str("host", host)
	} else {
		o.null("host")
	}
	o.num("port", int64(port))
	o.num("version", BrokerInfoVersion)
	o.str("timestamp", strconv.FormatInt(b.Timestamp, 10))
	if b.Rack != "" {
		o.str("rack", b.Rack)
	}
	return o.bytes()
}

// DecodeBrokerInfo is BrokerIdZNode.decode: accepts versions 1 to 5.
func DecodeBrokerInfo(id int32, data []byte) (BrokerInfo, error) {
	var raw struct {
		Version   *int32                           `json:"version"`
		Host      *string                          `json:"host"`
		Port      int32                            `json:"port"`
		JMXPort   *int32                           `json:"jmx_port"`
		Timestamp string                           `json:"timestamp"`
		Endpoints []string                         `json:"endpoints"`
		Rack      *string                          `json:"rack"`
		LSPMap    map[string]string                `json:"listener_security_protocol_map"`
		Features  map[string]SupportedVersionRange `json:"features"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return BrokerInfo{}, fmt.Errorf("%w: broker %d registration %q: %v", ErrBadJSON, id, data, err)
	}
	if raw.Version == nil || *raw.Version < 1 {
		return BrokerInfo{}, fmt.Errorf("%w: unsupported version of broker %d registration: %s", ErrBadJSON, id, data)
	}
	b := BrokerInfo{ID: id, Version: *raw.Version, JMXPort: -1}
	if len(raw.Features) > 0 {
		b.Features = raw.Features
	}
	if raw.JMXPort != nil {
		b.JMXPort = *raw.JMXPort
	}
	if raw.Timestamp != "" {
		b.Timestamp, _ = strconv.ParseInt(raw.Timestamp, 10, 64)
	}
	if raw.Rack != nil {
		b.Rack = *raw.Rack
	}
	if b.Version == 1 {
		host := ""
		if raw.Host != nil {
			host = *raw.Host
		}
		b.Endpoints = []Endpoint{{ListenerName: "PLAINTEXT", Host: host, Port: raw.Port, SecurityProtocol: "PLAINTEXT"}}
		return b, nil
	}
	for _, s := range raw.Endpoints {
		e, err := parseEndpoint(s, raw.LSPMap)
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("%w: broker %d: %v", ErrBadJSON, id, err)
		}
		b.Endpoints = append(b.Endpoints, e)
	}
	return b, nil
}

// parseEndpoint parses NAME://host:port; without a listener map the name is the protocol
// (SocketServerConfigs.DEFAULT_NAME_TO_SECURITY_PROTO).
func parseEndpoint(s string, lsp map[string]string) (Endpoint, error) {
	name, hostport, ok := strings.Cut(s, "://")
	if !ok {
		return Endpoint{}, fmt.Errorf("bad endpoint %q", s)
	}
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return Endpoint{}, fmt.Errorf("bad endpoint %q: %v", s, err)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil {
		return Endpoint{}, fmt.Errorf("bad endpoint port %q", s)
	}
	proto := name
	if lsp != nil {
		p, ok := lsp[name]
		if !ok {
			return Endpoint{}, fmt.Errorf("no security protocol for listener %s in %q", name, s)
		}
		proto = p
	}
	return Endpoint{ListenerName: name, Host: host, Port: int32(port), SecurityProtocol: proto}, nil
}

// ---- /brokers/topics/<topic> (TopicZNode, version 3) ----

// TopicAssignment is the content of a topic znode. Partitions[p] is the replica list (first =
// preferred leader); Adding/Removing hold entries only for partitions under reassignment.
type TopicAssignment struct {
	TopicID    [16]byte // zero = none written (Kafka < 2.8 topics)
	Partitions map[int32][]int32
	Adding     map[int32][]int32
	Removing   map[int32][]int32
}

// EncodeTopicAssignment is TopicZNode.encode.
func EncodeTopicAssignment(a TopicAssignment) []byte {
	o := newObj()
	o.num("version", 3)
	o.raw("partitions", partitionMap(a.Partitions))
	adding, removing := map[int32][]int32{}, map[int32][]int32{}
	for p, r := range a.Adding {
		if len(r) > 0 {
			adding[p] = r
		}
	}
	for p, r := range a.Removing {
		if len(r) > 0 {
			removing[p] = r
		}
	}
	o.raw("adding_replicas", partitionMap(adding))
	o.raw("removing_replicas", partitionMap(removing))
	if a.TopicID != ([16]byte{}) {
		o.str("topic_id", TopicIDString(a.TopicID))
	}
	return o.bytes()
}

// DecodeTopicAssignment is TopicZNode.decode: accepts versions 1 to 3.
func DecodeTopicAssignment(data []byte) (TopicAssignment, error) {
	var raw struct {
		TopicID    *string            `json:"topic_id"`
		Partitions map[string][]int32 `json:"partitions"`
		Adding     map[string][]int32 `json:"adding_replicas"`
		Removing   map[string][]int32 `json:"removing_replicas"`
	}
	a := TopicAssignment{Partitions: map[int32][]int32{}, Adding: map[int32][]int32{}, Removing: map[int32][]int32{}}
	if len(data) == 0 {
		return a, nil
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return a, fmt.Errorf("%w: topic %q: %v", ErrBadJSON, data, err)
	}
	if raw.TopicID != nil {
		id, err := ParseTopicID(*raw.TopicID)
		if err != nil {
			return a, err
		}
		a.TopicID = id
	}
	conv := func(in map[string][]int32, out map[int32][]int32) error {
		for k, v := range in {
			p, err := strconv.ParseInt(k, 10, 32)
			if err != nil {
				return fmt.Errorf("%w: partition %q", ErrBadJSON, k)
			}
			if v == nil {
				v = []int32{}
			}
			out[int32(p)] = v
		}
		return nil
	}
	if err := conv(raw.Partitions, a.Partitions); err != nil {
		return a, err
	}
	// Only entries of existing partitions count, as in Kafka.
	adding, removing := map[int32][]int32{}, map[int32][]int32{}
	if err := conv(raw.Adding, adding); err != nil {
		return a, err
	}
	if err := conv(raw.Removing, removing); err != nil {
		return a, err
	}
	for p := range a.Partitions {
		if r := adding[p]; len(r) > 0 {
			a.Adding[p] = r
		}
		if r := removing[p]; len(r) > 0 {
			a.Removing[p] = r
		}
	}
	return a, nil
}

// ---- /brokers/topics/<t>/partitions/<p>/state (TopicPartitionStateZNode, version 1) ----

// LeaderRecoveryState values.
const (
	LeaderRecovered  int32 = 0
	LeaderRecovering int32 = 1
)

// NoLeader is the leader id of a partition without a leader.
const NoLeader int32 = -1

// LeaderAndIsr mirrors Kafka's LeaderAndIsr. PartitionEpoch is the state znode's zkVersion.
type LeaderAndIsr struct {
	Leader              int32
	LeaderEpoch         int32
	ISR                 []int32
	LeaderRecoveryState int32
	PartitionEpoch      int32
}

// PartitionState is LeaderIsrAndControllerEpoch.
type PartitionState struct {
	LeaderAndIsr
	ControllerEpoch int32
}

// EncodePartitionState is TopicPartitionStateZNode.encode.
func EncodePartitionState(s PartitionState) []byte {
	o := newObj()
	o.num("controller_epoch", int64(s.ControllerEpoch))
	o.num("leader", int64(s.Leader))
	o.num("version", 1)
	o.num("leader_epoch", int64(s.LeaderEpoch))
	o.raw("isr", int32List(s.ISR))
	if s.LeaderRecoveryState != LeaderRecovered {
		o.num("leader_recovery_state", int64(s.LeaderRecoveryState))
	}
	return o.bytes()
}

// DecodePartitionState is TopicPartitionStateZNode.decode; zkVersion becomes PartitionEpoch.
func DecodePartitionState(data []byte, zkVersion int32) (PartitionState, error) {
	var raw struct {
		Leader          *int32  `json:"leader"`
		LeaderEpoch     *int32  `json:"leader_epoch"`
		ISR             []int32 `json:"isr"`
		ControllerEpoch *int32  `json:"controller_epoch"`
		Recovery        int32   `json:"leader_recovery_state"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return PartitionState{}, fmt.Errorf("%w: partition state %q: %v", ErrBadJSON, data, err)
	}
	if raw.Leader == nil || raw.LeaderEpoch == nil || raw.ControllerEpoch == nil {
		return PartitionState{}, fmt.Errorf("%w: partition state %q: missing field", ErrBadJSON, data)
	}
	if raw.ISR == nil {
		raw.ISR = []int32{}
	}
	return PartitionState{
		LeaderAndIsr: LeaderAndIsr{Leader: *raw.Leader, LeaderEpoch: *raw.LeaderEpoch, ISR: raw.ISR,
			LeaderRecoveryState: raw.Recovery, PartitionEpoch: zkVersion},
		ControllerEpoch: *raw.ControllerEpoch,
	}, nil
}

// ---- /config/<type>/<name> (ConfigEntityZNode, version 1) ----

// EncodeConfig is ConfigEntityZNode.encode; keys sorted.
func EncodeConfig(cfg map[string]string) []byte {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c := newObj()
	for _, k := range keys {
		c.str(k, cfg[k])
	}
	o := newObj()
	o.num("version", 1)
	o.raw("config", c.bytes())
	return o.bytes()
}

// DecodeConfig is ConfigEntityZNode.decode: null or empty data is an empty config.
func DecodeConfig(data []byte) (map[string]string, error) {
	cfg := map[string]string{}
	if len(data) == 0 || string(data) == "null" {
		return cfg, nil
	}
	var raw struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return cfg, fmt.Errorf("%w: config %q: %v", ErrBadJSON, data, err)
	}
	for k, v := range raw.Config {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			s = string(v) // Kafka's to[String] accepts only strings; keep numbers readable anyway
		}
		cfg[k] = s
	}
	return cfg, nil
}

// ---- /config/changes/config_change_<seq> (ConfigEntityChangeNotificationSequenceZNode, version 2) ----

// EncodeConfigChange writes {"version":2,"entity_path":"<type>/<name>"}.
func EncodeConfigChange(entityPath string) []byte {
	o := newObj()
	o.num("version", 2)
	o.str("entity_path", entityPath)
	return o.bytes()
}

// DecodeConfigChange returns the entity type and name of a notification (versions 1 and 2).
// For nested entities (users/alice/clients/app1) name holds the rest of the path.
func DecodeConfigChange(data []byte) (entityType, entityName string, err error) {
	var raw struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
		EntityType string `json:"entity_type"`
		EntityName string `json:"entity_name"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return "", "", fmt.Errorf("%w: config change %q: %v", ErrBadJSON, data, err)
	}
	switch raw.Version {
	case 1:
		return raw.EntityType, raw.EntityName, nil
	case 2:
		t, n, ok := strings.Cut(raw.EntityPath, "/")
		if !ok {
			return "", "", fmt.Errorf("%w: config change entity_path %q", ErrBadJSON, raw.EntityPath)
		}
		return t, n, nil
	}
	return "", "", fmt.Errorf("%w: config change version %d", ErrBadJSON, raw.Version)
}

// ---- /controller (ControllerZNode, version 2) and /controller_epoch ----

// EncodeController is ControllerZNode.encode (ZK-mode brokers write kraftControllerEpoch -1).
func EncodeController(brokerID int32, timestampMs int64) []byte {
	o := newObj()
	o.num("version", 2)
	o.num("brokerid", int64(brokerID))
	o.str("timestamp", strconv.FormatInt(timestampMs, 10))
	o.num("kraftControllerEpoch", -1)
	return o.bytes()
}

// DecodeController returns the broker id and, when present (version 2), kraftControllerEpoch
// (-1 when absent or written by a ZK broker).
func DecodeController(data []byte) (brokerID int32, kraftEpoch int32, err error) {
	var raw struct {
		BrokerID   *int32 `json:"brokerid"`
		KraftEpoch *int32 `json:"kraftControllerEpoch"`
	}
	if err := json.Unmarshal(data, &raw); err != nil || raw.BrokerID == nil {
		return -1, -1, fmt.Errorf("%w: controller %q", ErrBadJSON, data)
	}
	kraftEpoch = -1
	if raw.KraftEpoch != nil {
		kraftEpoch = *raw.KraftEpoch
	}
	return *raw.BrokerID, kraftEpoch, nil
}

// EncodeControllerEpoch is the plain decimal text of /controller_epoch.
func EncodeControllerEpoch(epoch int32) []byte { return []byte(strconv.Itoa(int(epoch))) }

// DecodeControllerEpoch parses /controller_epoch.
func DecodeControllerEpoch(data []byte) (int32, error) {
	e, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: controller epoch %q", ErrBadJSON, data)
	}
	return int32(e), nil
}

// ---- /cluster/id (ClusterIdZNode) ----

// EncodeClusterID writes {"version":"1","id":"..."} (the version is a string in Kafka).
func EncodeClusterID(id string) []byte {
	o := newObj()
	o.str("version", "1")
	o.str("id", id)
	return o.bytes()
}

// DecodeClusterID reads the id.
func DecodeClusterID(data []byte) (string, error) {
	var raw struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(data, &raw); err != nil || raw.ID == nil {
		return "", fmt.Errorf("%w: cluster id %q", ErrBadJSON, data)
	}
	return *raw.ID, nil
}

// ---- notifications read by the controller ----

// EncodeLogDirEvent is LogDirEventNotificationSequenceZNode.encode (event 1 = LogDirFailure).
func EncodeLogDirEvent(brokerID int32) []byte {
	o := newObj()
	o.num("version", 1)
	o.num("broker", int64(brokerID))
	o.num("event", 1)
	return o.bytes()
}

// DecodeLogDirEvent returns the broker id of a log dir event notification.
func DecodeLogDirEvent(data []byte) (int32, error) {
	var raw struct {
		Broker *int32 `json:"broker"`
	}
	if err := json.Unmarshal(data, &raw); err != nil || raw.Broker == nil {
		return -1, fmt.Errorf("%w: log dir event %q", ErrBadJSON, data)
	}
	return *raw.Broker, nil
}

// TopicPartition names one partition in notifications.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// DecodePartitionList reads {"version":1,"partitions":[{"topic":..,"partition":..}]}
// (isr_change_ notifications, /admin/preferred_replica_election).
func DecodePartitionList(data []byte) ([]TopicPartition, error) {
	var raw struct {
		Partitions []TopicPartition `json:"partitions"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: partition list %q: %v", ErrBadJSON, data, err)
	}
	return raw.Partitions, nil
}

// ReassignmentEntry is one partition of the legacy /admin/reassign_partitions node.
type ReassignmentEntry struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// DecodeReassignment reads /admin/reassign_partitions (version 1).
func DecodeReassignment(data []byte) ([]ReassignmentEntry, error) {
	var raw struct {
		Partitions []ReassignmentEntry `json:"partitions"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: reassignment %q: %v", ErrBadJSON, data, err)
	}
	return raw.Partitions, nil
}

// EncodeReassignment writes /admin/reassign_partitions as Kafka's legacy tools do.
func EncodeReassignment(entries []ReassignmentEntry) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"partitions":[`)
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		o := newObj()
		o.str("topic", e.Topic)
		o.num("partition", int64(e.Partition))
		o.raw("replicas", int32List(e.Replicas))
		b.Write(o.bytes())
	}
	b.WriteString("]}")
	return b.Bytes()
}

// ---- /latest_producer_id_block (ProducerIdBlockZNode, version 1) ----

// ProducerIDBlockSize is the number of producer ids a broker takes at a time.
const ProducerIDBlockSize = 1000

// ProducerIDBlock is a range of producer ids owned by a broker.
type ProducerIDBlock struct {
	BrokerID   int32
	BlockStart int64
	BlockEnd   int64 // inclusive
}

// EncodeProducerIDBlock writes {"version":1,"broker":2,"block_start":"3000","block_end":"3999"}.
func EncodeProducerIDBlock(b ProducerIDBlock) []byte {
	o := newObj()
	o.num("version", 1)
	o.num("broker", int64(b.BrokerID))
	o.str("block_start", strconv.FormatInt(b.BlockStart, 10))
	o.str("block_end", strconv.FormatInt(b.BlockEnd, 10))
	return o.bytes()
}

// DecodeProducerIDBlock reads the block (bounds are strings in Kafka's JSON).
func DecodeProducerIDBlock(data []byte) (ProducerIDBlock, error) {
	var raw struct {
		Broker     int32  `json:"broker"`
		BlockStart string `json:"block_start"`
		BlockEnd   string `json:"block_end"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return ProducerIDBlock{}, fmt.Errorf("%w: producer id block %q", ErrBadJSON, data)
	}
	start, err1 := strconv.ParseInt(raw.BlockStart, 10, 64)
	end, err2 := strconv.ParseInt(raw.BlockEnd, 10, 64)
	if err1 != nil || err2 != nil {
		return ProducerIDBlock{}, fmt.Errorf("%w: producer id block %q", ErrBadJSON, data)
	}
	return ProducerIDBlock{BrokerID: raw.Broker, BlockStart: start, BlockEnd: end}, nil
}
