package broker

// metadata_cache.go mirrors kafka.server.metadata.ZkMetadataCache: the cluster view this
// broker answers Metadata (and DescribeCluster, FindCoordinator...) from. Only the
// controller's UpdateMetadata requests change it.

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// LeaderDuringDelete is the leader id the controller sends in UpdateMetadata for a partition
// of a topic being deleted (LeaderAndIsr.LeaderDuringDelete): the cache drops the partition.
const LeaderDuringDelete = -2

// NoLeader is the leader id of a partition without a leader.
const NoLeader = -1

// BrokerEndpoint is one listener of a live broker.
type BrokerEndpoint struct {
	ListenerName     string
	Host             string
	Port             int32
	SecurityProtocol int16
}

// BrokerMetadata is a live broker as the controller last described it.
type BrokerMetadata struct {
	ID        int32
	Rack      *string
	Endpoints []BrokerEndpoint
}

// Endpoint returns the broker's endpoint for listener.
func (b BrokerMetadata) Endpoint(listener string) (BrokerEndpoint, bool) {
	for _, e := range b.Endpoints {
		if e.ListenerName == listener {
			return e, true
		}
	}
	return BrokerEndpoint{}, false
}

// PartitionMetadata is one partition's state from UpdateMetadata.
type PartitionMetadata struct {
	Topic           string
	Partition       int32
	ControllerEpoch int32
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	ZKVersion       int32
	Replicas        []int32
	OfflineReplicas []int32
}

// TopicMetadata is one topic's partitions and id.
type TopicMetadata struct {
	Name       string
	ID         [16]byte
	Partitions map[int32]*PartitionMetadata
}

// metadataSnapshot is immutable once published.
type metadataSnapshot struct {
	controllerID int32
	brokers      map[int32]BrokerMetadata
	topics       map[string]*TopicMetadata
	topicNames   map[[16]byte]string
}

// MetadataCache is safe for concurrent use: readers load an immutable snapshot without
// locks (as Kafka's @volatile metadataSnapshot); UpdateMetadata calls are serialized by mu
// and publish a new snapshot. Values returned by readers are shared and must not be
// modified.
type MetadataCache struct {
	brokerID int32
	mu       sync.Mutex // serializes writers
	snap     atomic.Pointer[metadataSnapshot]
}

// NewMetadataCache returns an empty cache: no brokers, no topics, no controller.
func NewMetadataCache(brokerID int32) *MetadataCache {
	c := &MetadataCache{brokerID: brokerID}
	c.snap.Store(&metadataSnapshot{
		controllerID: -1,
		brokers:      map[int32]BrokerMetadata{},
		topics:       map[string]*TopicMetadata{},
		topicNames:   map[[16]byte]string{},
	})
	return c
}

// UpdateMetadata applies an UpdateMetadata request (any version 0-8) and returns the
// partitions it removed (leader == LeaderDuringDelete), as ZkMetadataCache.updateMetadata
// does. The controller-epoch check is the caller's (ReplicaManager.MaybeUpdateMetadataCache).
func (c *MetadataCache) UpdateMetadata(req *kmsg.UpdateMetadataRequest) (deleted []logstore.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.snap.Load()

	next := &metadataSnapshot{
		controllerID: req.ControllerID,
		brokers:      make(map[int32]BrokerMetadata, len(req.LiveBrokers)),
		topics:       make(map[string]*TopicMetadata, len(old.topics)),
		topicNames:   make(map[[16]byte]string, len(old.topicNames)),
	}
	if req.IsKRaftController { // ZK brokers in migration only; a KRaft controller is not a broker we can name
		next.controllerID = -1
	}
	for _, b := range req.LiveBrokers {
		bm := BrokerMetadata{ID: b.ID, Rack: b.Rack}
		if req.Version == 0 { // v0: one PLAINTEXT endpoint
			bm.Endpoints = []BrokerEndpoint{{ListenerName: "PLAINTEXT", Host: b.Host, Port: b.Port}}
		}
		for _, e := range b.Endpoints {
			name := e.ListenerName
			if req.Version < 3 { // before v3 the listener is named after its security protocol
				name = securityProtocolName(e.SecurityProtocol)
			}
			bm.Endpoints = append(bm.Endpoints, BrokerEndpoint{ListenerName: name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol})
		}
		next.brokers[b.ID] = bm
	}
	for name, t := range old.topics {
		next.topics[name] = t
		if t.ID != ([16]byte{}) {
			next.topicNames[t.ID] = name
		}
	}

	apply := func(topic string, id [16]byte, parts []kmsg.UpdateMetadataRequestTopicPartition) {
		prev := next.topics[topic]
		t := &TopicMetadata{Name: topic, ID: id, Partitions: map[int32]*PartitionMetadata{}}
		if prev != nil {
			if t.ID == ([16]byte{}) {
				t.ID = prev.ID
			}
			for p, pm := range prev.Partitions {
				t.Partitions[p] = pm
			}
		}
		for i := range parts {
			ps := &parts[i]
			if ps.Leader == LeaderDuringDelete {
				delete(t.Partitions, ps.Partition)
				deleted = append(deleted, logstore.TopicPartition{Topic: topic, Partition: ps.Partition})
				continue
			}
			t.Partitions[ps.Partition] = &PartitionMetadata{
				Topic: topic, Partition: ps.Partition, ControllerEpoch: ps.ControllerEpoch,
				Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch, ISR: ps.ISR, ZKVersion: ps.ZKVersion,
				Replicas: ps.Replicas, OfflineReplicas: ps.OfflineReplicas,
			}
		}
		if prev != nil && prev.ID != ([16]byte{}) {
			delete(next.topicNames, prev.ID)
		}
		if len(t.Partitions) == 0 {
			delete(next.topics, topic)
			return
		}
		next.topics[topic] = t
		if t.ID != ([16]byte{}) {
			next.topicNames[t.ID] = topic
		}
	}
	if req.Version < 5 {
		byTopic := map[string][]kmsg.UpdateMetadataRequestTopicPartition{}
		var order []string
		for _, ps := range req.PartitionStates {
			if _, ok := byTopic[ps.Topic]; !ok {
				order = append(order, ps.Topic)
			}
			byTopic[ps.Topic] = append(byTopic[ps.Topic], ps)
		}
		for _, topic := range order {
			apply(topic, [16]byte{}, byTopic[topic])
		}
	} else {
		for _, ts := range req.TopicStates {
			apply(ts.Topic, ts.TopicID, ts.PartitionStates)
		}
	}
	c.snap.Store(next)
	return deleted
}

func securityProtocolName(p int16) string {
	switch p {
	case 0:
		return "PLAINTEXT"
	case 1:
		return "SSL"
	case 2:
		return "SASL_PLAINTEXT"
	case 3:
		return "SASL_SSL"
	}
	return "UNKNOWN"
}

// ControllerID returns the active controller's id, or -1 if none is known.
func (c *MetadataCache) ControllerID() int32 { return c.snap.Load().controllerID }

// AliveBrokers returns the live brokers sorted by id.
func (c *MetadataCache) AliveBrokers() []BrokerMetadata {
	s := c.snap.Load()
	out := make([]BrokerMetadata, 0, len(s.brokers))
	for _, b := range s.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Brokers is AliveBrokers (contract name).
func (c *MetadataCache) Brokers() []BrokerMetadata { return c.AliveBrokers() }

// Broker returns a live broker.
func (c *MetadataCache) Broker(id int32) (BrokerMetadata, bool) {
	b, ok := c.snap.Load().brokers[id]
	return b, ok
}

// IsBrokerAlive reports whether id is among the live brokers.
func (c *MetadataCache) IsBrokerAlive(id int32) bool {
	_, ok := c.snap.Load().brokers[id]
	return ok
}

// Topic returns a topic's metadata.
func (c *MetadataCache) Topic(name string) (*TopicMetadata, bool) {
	t, ok := c.snap.Load().topics[name]
	return t, ok
}

// Contains reports whether the cache knows topic.
func (c *MetadataCache) Contains(topic string) bool {
	_, ok := c.snap.Load().topics[topic]
	return ok
}

// TopicNames returns every known topic, sorted.
func (c *MetadataCache) TopicNames() []string {
	s := c.snap.Load()
	out := make([]string, 0, len(s.topics))
	for name := range s.topics {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TopicID returns the id of topic (zero if unknown or pre-2.8).
func (c *MetadataCache) TopicID(topic string) ([16]byte, bool) {
	t, ok := c.snap.Load().topics[topic]
	if !ok {
		return [16]byte{}, false
	}
	return t.ID, true
}

// TopicName returns the name of the topic with id.
func (c *MetadataCache) TopicName(id [16]byte) (string, bool) {
	n, ok := c.snap.Load().topicNames[id]
	return n, ok
}

// TopicIDs returns name -> id for every topic with an id.
func (c *MetadataCache) TopicIDs() map[string][16]byte {
	s := c.snap.Load()
	out := make(map[string][16]byte, len(s.topics))
	for name, t := range s.topics {
		if t.ID != ([16]byte{}) {
			out[name] = t.ID
		}
	}
	return out
}

// Partition returns one partition's state.
func (c *MetadataCache) Partition(tp logstore.TopicPartition) (*PartitionMetadata, bool) {
	t, ok := c.snap.Load().topics[tp.Topic]
	if !ok {
		return nil, false
	}
	p, ok := t.Partitions[tp.Partition]
	return p, ok
}
