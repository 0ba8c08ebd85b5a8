package zkmeta

// KafkaZkClient (core/src/main/scala/kafka/zk/KafkaZkClient.scala) and the topic/config
// writes of AdminZkClient: typed reads and writes of Kafka's znodes.

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// CreateTopLevelPaths creates Kafka's persistent paths (ZkData.PersistentZkPaths) if missing.
func (c *Client) CreateTopLevelPaths() error {
	for _, p := range PersistentPaths {
		if err := c.CreateRecursive(p, nil); err != nil && !errors.Is(err, ErrNodeExists) {
			return err
		}
	}
	return nil
}

// ---- cluster id ----

// GetClusterID returns the cluster id, or ErrNoNode if none was ever written.
func (c *Client) GetClusterID() (string, error) {
	data, _, err := c.Get(ClusterIDPath)
	if err != nil {
		return "", err
	}
	return DecodeClusterID(data)
}

// GetOrCreateClusterID returns the existing cluster id or writes proposed ("" = a new random
// one), as KafkaZkClient.getOrCreateClusterId.
func (c *Client) GetOrCreateClusterID(proposed string) (string, error) {
	id, err := c.GetClusterID()
	if err == nil || !errors.Is(err, ErrNoNode) {
		return id, err
	}
	if proposed == "" {
		proposed = NewClusterID()
	}
	err = c.CreateRecursive(ClusterIDPath, EncodeClusterID(proposed))
	if errors.Is(err, ErrNodeExists) {
		return c.GetClusterID()
	}
	if err != nil {
		return "", err
	}
	c.log.WithField("cluster_id", proposed).Info("created cluster id")
	return proposed, nil
}

// ---- broker ids and registration ----

// TopicExists reports whether /brokers/topics/<name> exists.
func (c *Client) TopicExists(name string) (bool, error) {
	ok, _, err := c.Exists(TopicPath(name))
	return ok, err
}

// CreateTopic writes a new topic as AdminZkClient.createTopicWithAssignment: first
// /config/topics/<name> (set-or-create, even when empty; no change notification), then
// /brokers/topics/<name>. ErrTopicExists if the topic znode exists. A zero TopicID gets a
// random one. Validation (names, replication factor) is the caller's.
func (c *Client) CreateTopic(name string, a TopicAssignment, configs map[string]string) error {
	exists, err := c.TopicExists(name)
	if err != nil {
		return err
	}
	if exists {
		return fmt.Errorf("topic %q: %w", name, ErrTopicExists)
	}
	if a.TopicID == ([16]byte{}) {
		a.TopicID = NewUUID()
	}
	if err := c.setOrCreate(TopicConfigPath(name), EncodeConfig(configs)); err != nil {
		return fmt.Errorf("create topic %q config: %w", name, err)
	}
	err = c.CreateRecursive(TopicPath(name), EncodeTopicAssignment(a))
	if errors.Is(err, ErrNodeExists) {
		return fmt.Errorf("topic %q: %w", name, ErrTopicExists)
	}
	if err != nil {
		return fmt.Errorf("create topic %q: %w", name, err)
	}
	c.log.WithFields(logrus.Fields{"topic": name, "topic_id": TopicIDString(a.TopicID), "partitions": len(a.Partitions)}).
		Info("created topic")
	return nil
}

func (c *Client) setOrCreate(path string, data []byte) error {
	_, err := c.Set(path, data, -1)
	if errors.Is(err, ErrNoNode) {
		err = c.CreateRecursive(path, data)
		if errors.Is(err, ErrNodeExists) {
			_, err = c.Set(path, data, -1)
		}
	}
	return err
}

// GetTopic reads a topic's assignment and the znode's zkVersion. ErrNoNode if absent.
func (c *Client) GetTopic(name string) (TopicAssignment, int32, error) {
	data, st, err := c.Get(TopicPath(name))
	if err != nil {
		return TopicAssignment{}, 0, err
	}
	a, err := DecodeTopicAssignment(data)
	if err != nil {
		return TopicAssignment{}, 0, fmt.Errorf("topic %q: %w", name, err)
	}
	return a, st.Version, nil
}

// GetTopicW reads a topic and arms a data watch (partition additions, reassignment, deletion).
func (c *Client) GetTopicW(name string) (TopicAssignment, int32, <-chan Event, error) {
	data, version, ch, err := c.GetW(TopicPath(name))
	if err != nil {
		return TopicAssignment{}, 0, nil, err
	}
	a, err := DecodeTopicAssignment(data)
	if err != nil {
		return TopicAssignment{}, 0, ch, fmt.Errorf("topic %q: %w", name, err)
	}
	return a, version, ch, nil
}

// SetTopicAssignment rewrites a topic znode if its zkVersion is expectedVersion (-1 = any);
// used by CreatePartitions (AdminZkClient.writeTopicPartitionAssignment). ErrBadVersion on
// conflict, ErrNoNode if the topic is gone.
func (c *Client) SetTopicAssignment(name string, a TopicAssignment, expectedVersion int32) error {
	_, err := c.Set(TopicPath(name), EncodeTopicAssignment(a), expectedVersion)
	return err
}

// SetTopicAssignmentAsController rewrites a topic znode as the controller does (any data
// version, fenced by /controller_epoch): reassignment steps and adding missing topic ids.
// Returns the new zkVersion.
func (c *Client) SetTopicAssignmentAsController(name string, a TopicAssignment, ctrlEpochZkVersion int32) (int32, error) {
	path := TopicPath(name)
	res, err := c.checkedMulti("set", path, ctrlEpochZkVersion,
		&zk.SetDataRequest{Path: c.abs(path), Data: EncodeTopicAssignment(a), Version: -1})
	if err != nil {
		return 0, err
	}
	return res[0].Stat.Version, nil
}

// GetAllTopics lists /brokers/topics, sorted.
func (c *Client) GetAllTopics() ([]string, error) {
	t, err := c.Children(TopicsPath)
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	sort.Strings(t)
	return t, err
}

// GetAllTopicsW lists topics and arms a child watch on /brokers/topics.
func (c *Client) GetAllTopicsW() ([]string, <-chan Event, error) {
	t, ch, err := c.ChildrenW(TopicsPath)
	sort.Strings(t)
	return t, ch, err
}

// ---- configs ----

// GetEntityConfig reads /config/<type>/<name>; a missing node is an empty config (as Kafka's
// fetchEntityConfig).
func (c *Client) GetEntityConfig(entityType, name string) (map[string]string, error) {
	data, _, err := c.Get(ConfigEntityPath(entityType, name))
	if errors.Is(err, ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeConfig(data)
}

// SetEntityConfig writes /config/<type>/<name> (set-or-create) and then the change
// notification /config/changes/config_change_<seq> {"version":2,"entity_path":"<type>/<name>"}
// (AdminZkClient.changeEntityConfig). Returns the notification's name.
func (c *Client) SetEntityConfig(entityType, name string, cfg map[string]string) (string, error) {
	if err := c.setOrCreate(ConfigEntityPath(entityType, name), EncodeConfig(cfg)); err != nil {
		return "", err
	}
	return c.CreateConfigChangeNotification(entityType + "/" + name)
}

// CreateConfigChangeNotification creates a persistent-sequential config_change_ node.
func (c *Client) CreateConfigChangeNotification(entityPath string) (string, error) {
	p, err := c.Create(ConfigChangesPath+"/"+ConfigChangePrefix, EncodeConfigChange(entityPath), PersistentSequential)
	if errors.Is(err, ErrNoNode) {
		if cerr := c.CreateRecursive(ConfigChangesPath, nil); cerr != nil && !errors.Is(cerr, ErrNodeExists) {
			return "", cerr
		}
		p, err = c.Create(ConfigChangesPath+"/"+ConfigChangePrefix, EncodeConfigChange(entityPath), PersistentSequential)
	}
	return p, err
}

// GetTopicConfig reads /config/topics/<name> (empty map if missing).
func (c *Client) GetTopicConfig(name string) (map[string]string, error) {
	return c.GetEntityConfig(ConfigTypeTopic, name)
}

// SetTopicConfig replaces a topic's overrides and notifies brokers (AlterConfigs).
func (c *Client) SetTopicConfig(name string, cfg map[string]string) error {
	_, err := c.SetEntityConfig(ConfigTypeTopic, name, cfg)
	return err
}

// ---- partition state ----

// GetPartitionState reads a partition's state; PartitionEpoch = the znode's zkVersion.
func (c *Client) GetPartitionState(topic string, p int32) (PartitionState, error) {
	data, st, err := c.Get(PartitionStatePath(topic, p))
	if err != nil {
		return PartitionState{}, err
	}
	return DecodePartitionState(data, st.Version)
}

// GetPartitionStates reads the state of every partition of a topic that has one.
func (c *Client) GetPartitionStates(topic string) (map[int32]PartitionState, error) {
	children, err := c.Children(TopicPartitionsPath(topic))
	out := map[int32]PartitionState{}
	if errors.Is(err, ErrNoNode) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, ch := range children {
		p, perr := strconv.ParseInt(ch, 10, 32)
		if perr != nil {
			continue
		}
		s, err := c.GetPartitionState(topic, int32(p))
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[int32(p)] = s
	}
	return out, nil
}

// CreatePartitionState creates .../partitions/<p>/state (and its null-data parents) as the
// controller, fenced by /controller_epoch. ErrNodeExists if the state exists;
// ErrControllerMoved if the epoch check fails. s.PartitionEpoch is ignored (a new node has 0).
func (c *Client) CreatePartitionState(topic string, p int32, s PartitionState, ctrlEpochZkVersion int32) error {
	return c.createPartitionState(topic, p, s, ctrlEpochZkVersion, true)
}

func (c *Client) createPartitionState(topic string, p int32, s PartitionState, ctrlEpochZkVersion int32, withTopicParent bool) error {
	parents := []string{TopicPartitionPath(topic, p)}
	if withTopicParent {
		parents = []string{TopicPartitionsPath(topic), TopicPartitionPath(topic, p)}
	}
	for _, parent := range parents {
		_, err := c.checkedMulti("create", parent, ctrlEpochZkVersion,
			&zk.CreateRequest{Path: c.abs(parent), Data: nil, Acl: c.acls(parent), Flags: zk.FlagPersistent})
		if err != nil && !errors.Is(err, ErrNodeExists) {
			return err
		}
	}
	path := PartitionStatePath(topic, p)
	_, err := c.checkedMulti("create", path, ctrlEpochZkVersion,
		&zk.CreateRequest{Path: c.abs(path), Data: EncodePartitionState(s), Acl: c.acls(path), Flags: zk.FlagPersistent})
	return err
}

// UpdatePartitionState writes a partition's state if its zkVersion is expectedZkVersion, fenced
// by /controller_epoch. Returns the new zkVersion (the new partition epoch). ErrBadVersion:
// re-read and retry; ErrControllerMoved: resign.
func (c *Client) UpdatePartitionState(topic string, p int32, s PartitionState, expectedZkVersion, ctrlEpochZkVersion int32) (int32, error) {
	path := PartitionStatePath(topic, p)
	res, err := c.checkedMulti("set", path, ctrlEpochZkVersion,
		&zk.SetDataRequest{Path: c.abs(path), Data: EncodePartitionState(s), Version: expectedZkVersion})
	if err != nil {
		return 0, err
	}
	return res[0].Stat.Version, nil
}

// ---- topic deletion ----

// MarkTopicForDeletion creates /admin/delete_topics/<name> (AdminZkClient.deleteTopic).
// ErrNoNode if the topic does not exist; ErrTopicMarkedForDeletion if already marked.
func (c *Client) MarkTopicForDeletion(name string) error {
	exists, err := c.TopicExists(name)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("topic %q: %w", name, ErrNoNode)
	}
	err = c.CreateRecursive(DeleteTopicPath(name), nil)
	if errors.Is(err, ErrNodeExists) {
		return fmt.Errorf("topic %q: %w", name, ErrTopicMarkedForDeletion)
	}
	return err
}

// GetTopicsMarkedForDeletion lists /admin/delete_topics, sorted.
func (c *Client) GetTopicsMarkedForDeletion() ([]string, error) {
	t, err := c.Children(DeleteTopicsPath)
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	sort.Strings(t)
	return t, err
}

// DeleteTopicZNodes removes a deleted topic as the controller's TopicDeletionManager does
// at the end: /brokers/topics/<t> (recursively), /config/topics/<t>, then the deletion
// marker, each fenced by /controller_epoch. Missing nodes are fine.
func (c *Client) DeleteTopicZNodes(name string, ctrlEpochZkVersion int32) error {
	for _, p := range []string{TopicPath(name), TopicConfigPath(name), DeleteTopicPath(name)} {
		if err := c.deleteRecursive(p, ctrlEpochZkVersion); err != nil {
			return fmt.Errorf("delete topic %q: %w", name, err)
		}
	}
	return nil
}

// DeleteTopicDeletionMarker removes /admin/delete_topics/<t> only (delete.topic.enable=false).
func (c *Client) DeleteTopicDeletionMarker(name string, ctrlEpochZkVersion int32) error {
	return c.deleteRecursive(DeleteTopicPath(name), ctrlEpochZkVersion)
}

// DeleteAsController deletes the given paths (e.g. isr_change_ or log_dir_event_
// notifications, /admin/preferred_replica_election), each fenced by /controller_epoch;
// missing nodes are fine.
func (c *Client) DeleteAsController(ctrlEpochZkVersion int32, paths ...string) error {
	for _, p := range paths {
		_, err := c.checkedMulti("delete", p, ctrlEpochZkVersion, &zk.DeleteRequest{Path: c.abs(p), Version: -1})
		if err != nil && !errors.Is(err, ErrNoNode) {
			return err
		}
	}
	return nil
}

// ---- controller ----

// EnsureFeatureZNode makes /feature exist with status Enabled, as the ZK-mode controller does
// on failover (KafkaController.enableFeatureVersioning, IBP >= 2.7): created with no
// finalized features, or switched from Disabled keeping its features.
func (c *Client) EnsureFeatureZNode() (FeatureZNode, error) {
	f := FeatureZNode{Version: 2, Status: FeatureStatusEnabled, Features: map[string]int16{}}
	err := c.CreateRecursive(FeaturePath, EncodeFeatureZNode(f))
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, ErrNodeExists) {
		return FeatureZNode{}, err
	}
	data, st, err := c.Get(FeaturePath)
	if err != nil {
		return FeatureZNode{}, err
	}
	existing, err := DecodeFeatureZNode(data)
	if err != nil {
		return FeatureZNode{}, err
	}
	if existing.Status == FeatureStatusEnabled {
		return existing, nil
	}
	existing.Status, existing.Version = FeatureStatusEnabled, 2
	_, err = c.Set(FeaturePath, EncodeFeatureZNode(existing), st.Version)
	return existing, err
}

// ---- producer id blocks ----

// AllocateProducerIDBlock takes the next block of 1000 producer ids for brokerID
// (ZkProducerIdManager.getNewProducerIdBlock): read, compute, conditional setData, retry on
// conflict. The first block is 0..999.
func (c *Client) AllocateProducerIDBlock(brokerID int32) (ProducerIDBlock, error) {
	for {
		data, st, err := c.Get(LatestProducerIDBlockPath)
		if errors.Is(err, ErrNoNode) {
			if cerr := c.CreateRecursive(LatestProducerIDBlockPath, nil); cerr != nil && !errors.Is(cerr, ErrNodeExists) {
				return ProducerIDBlock{}, cerr
			}
			continue
		}
		if err != nil {
			return ProducerIDBlock{}, err
		}
		next := ProducerIDBlock{BrokerID: brokerID, BlockStart: 0, BlockEnd: ProducerIDBlockSize - 1}
		if len(data) > 0 {
			cur, err := DecodeProducerIDBlock(data)
			if err != nil {
				return ProducerIDBlock{}, err
			}
			if cur.BlockEnd > math.MaxInt64-ProducerIDBlockSize {
				return ProducerIDBlock{}, fmt.Errorf("zkmeta: producer ids exhausted (last block ends at %d)", cur.BlockEnd)
			}
			next.BlockStart = cur.BlockEnd + 1
			next.BlockEnd = cur.BlockEnd + ProducerIDBlockSize
		}
		_, err = c.Set(LatestProducerIDBlockPath, EncodeProducerIDBlock(next), st.Version)
		if errors.Is(err, ErrBadVersion) {
			continue // another broker took a block meanwhile
		}
		if err != nil {
			return ProducerIDBlock{}, err
		}
		return next, nil
	}
}

// ---- notifications written by brokers ----

// CreateLogDirEventNotification tells the controller a log dir of brokerID failed
// (/log_dir_event_notification/log_dir_event_<seq>). Returns the created path.
func (c *Client) CreateLogDirEventNotification(brokerID int32) (string, error) {
	return c.Create(LogDirEventNotificationPath+"/"+LogDirEventPrefix, EncodeLogDirEvent(brokerID), PersistentSequential)
}

// ---- /admin/reassign_partitions (legacy) ----

// GetReassignment reads /admin/reassign_partitions: ErrNoNode if absent, ErrBadJSON if malformed.
func (c *Client) GetReassignment() ([]ReassignmentEntry, error) {
	data, _, err := c.Get(ReassignPartitionsPath)
	if err != nil {
		return nil, err
	}
	return DecodeReassignment(data)
}

// SetReassignmentAsController rewrites /admin/reassign_partitions with the entries still
// pending, or deletes it when none are left (KafkaZkClient.setOrCreatePartitionReassignment /
// deletePartitionReassignment), fenced by the controller epoch.
func (c *Client) SetReassignmentAsController(entries []ReassignmentEntry, ctrlEpochZkVersion int32) error {
	if len(entries) == 0 {
		return c.DeleteAsController(ctrlEpochZkVersion, ReassignPartitionsPath)
	}
	_, err := c.checkedMulti("set", ReassignPartitionsPath, ctrlEpochZkVersion,
		&zk.SetDataRequest{Path: c.abs(ReassignPartitionsPath), Data: EncodeReassignment(entries), Version: -1})
	return err
}

// GetPreferredReplicaElection reads /admin/preferred_replica_election: ErrNoNode if absent,
// ErrBadJSON if malformed.
func (c *Client) GetPreferredReplicaElection() ([]TopicPartition, error) {
	data, _, err := c.Get(PreferredReplicaElectionPath)
	if err != nil {
		return nil, err
	}
	return DecodePartitionList(data)
}

// PartitionStateResult is one partition's state read by GetPartitionStatesBatch.
type PartitionStateResult struct {
	State PartitionState
	Err   error // ErrNoNode, ErrBadJSON, ...
}

// GetPartitionStatesBatch reads many partition state znodes with up to maxInFlight reads in flight
// (KafkaZkClient.getTopicPartitionStatesRaw pipelines them the same way).
func (c *Client) GetPartitionStatesBatch(tps []TopicPartition) map[TopicPartition]PartitionStateResult {
	out := make(map[TopicPartition]PartitionStateResult, len(tps))
	var mu sync.Mutex
	c.parallel(len(tps), func(run func(func())) {
		for _, tp := range tps {
			run(func() {
				st, err := c.GetPartitionState(tp.Topic, tp.Partition)
				mu.Lock()
				out[tp] = PartitionStateResult{State: st, Err: err}
				mu.Unlock()
			})
		}
	})
	return out
}
