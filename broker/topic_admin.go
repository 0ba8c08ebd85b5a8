package broker

// topic_admin.go mirrors kafka.server.ZkAdminManager and kafka.zk.AdminZkClient: the topic
// creation, deletion-marking and partition-addition logic shared by CreateTopics (19),
// DeleteTopics (20), CreatePartitions (37) and auto-creation from Metadata, plus the
// DelayedCreatePartitions/DelayedDeleteTopics waits. In ZooKeeper mode the broker that
// handles the request writes the znodes itself; the controller reacts to its watches.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-kafka/samsa/controller"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// apiError is Kafka's ApiError: an error code with the exception message Kafka puts in
// ErrorMessage. ErrorCode finds the code through Unwrap.
type apiError struct {
	code *kerr.Error
	msg  string // nil message in Kafka when empty
}

func (e *apiError) Error() string {
	if e.msg == "" {
		return e.code.Message
	}
	return e.code.Message + ": " + e.msg
}

func (e *apiError) Unwrap() error { return e.code }

func newAPIError(code *kerr.Error, format string, args ...any) *apiError {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// apiErrorParts returns the code and the response message of err as Kafka's
// ApiError.fromThrowable would: the exception message, null when there is none.
func apiErrorParts(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var ae *apiError
	if errors.As(err, &ae) {
		if ae.msg == "" {
			return ae.code.Code, nil
		}
		m := ae.msg
		return ae.code.Code, &m
	}
	return ErrorCode(err), ErrorMessage(err)
}

// Topic name rules of org.apache.kafka.common.internals.Topic.
const maxTopicNameLength = 249

// validateTopicName is Topic.validate.
func validateTopicName(name string) error {
	if name == "" {
		return newAPIError(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	}
	if name == "." || name == ".." {
		return newAPIError(kerr.InvalidTopicException, "Topic name cannot be \".\" or \"..\"")
	}
	if len(name) > maxTopicNameLength {
		return newAPIError(kerr.InvalidTopicException,
			"Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return newAPIError(kerr.InvalidTopicException,
				"Topic name \"%s\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// hasCollisionChars is Topic.hasCollisionChars: '.' and '_' collide in metric names.
func hasCollisionChars(name string) bool { return strings.ContainsAny(name, "._") }

// topicsCollide is Topic.hasCollision.
func topicsCollide(a, b string) bool {
	return strings.ReplaceAll(a, ".", "_") == strings.ReplaceAll(b, ".", "_")
}

// notifier wakes waiters when the metadata cache changes (Kafka's topic purgatory is
// checked from the UpdateMetadata handler). Wait returns a channel closed by the next
// Notify; take it before checking the condition so no update is missed.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) Wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) Notify() {
	n.mu.Lock()
	ch := n.ch
	n.ch = nil
	n.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// controllerState is the part of the controller the handlers read.
type controllerState interface{ IsActive() bool }

// adminState is what the admin and controller-facing handlers need beyond APIs' fields;
// KafkaServer stores it in APIs.Admin. Safe for concurrent use: fields are set before
// serving, the epochs are atomics.
type adminState struct {
	cfg      *config.Config
	brokerID int32
	zk       *zkmeta.Client
	ctrl     controllerState // *controller.Controller
	// controller serves the controller-bound APIs (7, 56); nil in tests without one.
	controller *controller.Controller
	metadata   *MetadataCache
	log        *logrus.Entry

	// brokerEpoch is the czxid of our /brokers/ids/<id> znode (changes on re-registration).
	brokerEpoch atomic.Int64
	// metadataChanged is notified after every applied UpdateMetadata.
	metadataChanged notifier
}

// admin returns the admin state, or nil when the APIs were built without one (unit tests
// of the data path): handlers then answer as a broker that is not the controller.
func (a *APIs) admin() *adminState {
	ad, _ := a.Admin.(*adminState)
	return ad
}

func (ad *adminState) isController() bool {
	return ad != nil && ad.ctrl != nil && ad.ctrl.IsActive()
}

// isBrokerEpochStale is KafkaZkClient-mode isBrokerEpochStale: -1 means "not sent".
func (ad *adminState) isBrokerEpochStale(epoch int64) bool {
	if epoch == -1 {
		return false
	}
	return epoch < ad.brokerEpoch.Load()
}

// staticProps are the broker properties the operator set, used as the broker layer of a
// topic's config (LogConfig.fromProps(config.extractLogConfigMap, overrides)).
func (ad *adminState) staticProps() map[string]string {
	return staticBrokerProps(ad.cfg)
}

// topicSpec is one topic to create (CreatableTopic).
type topicSpec struct {
	Name              string
	NumPartitions     int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	Assignment        map[int32][]int32
	Configs           map[string]string
	NullConfigs       []string // names sent with a null value
}

// createdTopic is the outcome of createTopic.
type createdTopic struct {
	Assignment map[int32][]int32
	Overrides  map[string]string
	TopicID    [16]byte
}

// liveBrokers returns the registered brokers sorted by id, for replica assignment.
func (ad *adminState) liveBrokers() ([]controller.BrokerMetadata, error) {
	infos, err := ad.zk.GetAllBrokers()
	if err != nil {
		return nil, fmt.Errorf("read live brokers: %w", err)
	}
	out := make([]controller.BrokerMetadata, 0, len(infos))
	for _, b := range infos {
		bm := controller.BrokerMetadata{ID: b.ID}
		if b.Rack != "" {
			r := b.Rack
			bm.Rack = &r
		}
		out = append(out, bm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// assignReplicas is AdminUtils.assignReplicasToBrokers; its errors carry Kafka's code
// (INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR) and message.
func assignReplicas(brokers []controller.BrokerMetadata, nPartitions int32, rf int16, fixedStart, startPartition int32) (map[int32][]int32, error) {
	return controller.AssignReplicasToBrokers(brokers, nPartitions, rf, fixedStart, startPartition)
}

// validateTopicConfigs is LogConfig.validate for a CreateTopics request: unknown names
// and bad values are INVALID_CONFIG.
func (ad *adminState) validateTopicConfigs(overrides map[string]string) error {
	known := map[string]bool{}
	for _, n := range logstore.TopicConfigNames() {
		known[n] = true
	}
	names := make([]string, 0, len(overrides))
	for k := range overrides {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !known[k] {
			return newAPIError(kerr.InvalidConfig, "Unknown topic config name: %s", k)
		}
	}
	if err := logstore.ValidateTopicConfig(overrides); err != nil {
		return &apiError{code: kerr.InvalidConfig, msg: configErrorMessage(err)}
	}
	if _, err := logstore.NewLogConfig(ad.staticProps(), overrides); err != nil {
		return &apiError{code: kerr.InvalidConfig, msg: configErrorMessage(err)}
	}
	return nil
}

// configErrorMessage drops logstore's sentinel prefixes from a (possibly joined) config
// error, leaving the key, value and reason for the client.
func configErrorMessage(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, logstore.ErrInvalidConfig.Error()+": ")
	}
	return strings.Join(lines, "; ")
}

// validateAssignmentShape is the assignment part of AdminZkClient.validateTopicCreate.
func validateAssignmentShape(a map[int32][]int32) error {
	sizes := map[int]bool{}
	for _, r := range a {
		sizes[len(r)] = true
	}
	if len(sizes) != 1 {
		return newAPIError(kerr.InvalidReplicaAssignment, "All partitions should have the same number of replicas")
	}
	for _, r := range a {
		seen := map[int32]bool{}
		for _, b := range r {
			if seen[b] {
				return newAPIError(kerr.InvalidReplicaAssignment, "Duplicate replica assignment found: %s", formatAssignment(a))
			}
			seen[b] = true
		}
	}
	n := int64(len(a))
	var sum int64
	for p := range a {
		if p >= 0 {
			sum += int64(p)
		}
	}
	if sum != n*(n-1)/2 {
		return newAPIError(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
	}
	return nil
}

// formatAssignment prints an assignment as Scala prints a Map[Int, Seq[Int]].
func formatAssignment(a map[int32][]int32) string {
	ps := sortedPartitions(a)
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%d -> %s", p, formatList("ArraySeq(", a[p], ")")))
	}
	return "HashMap(" + strings.Join(parts, ", ") + ")"
}

func formatList(open string, l []int32, closing string) string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = fmt.Sprint(v)
	}
	return open + strings.Join(s, ", ") + closing
}

func sortedPartitions(a map[int32][]int32) []int32 {
	ps := make([]int32, 0, len(a))
	for p := range a {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// createTopic is one topic of ZkAdminManager.createTopics: resolve defaults, assign
// replicas, validate (AdminZkClient.validateTopicCreate) and, unless validateOnly, write
// /config/topics/<t> then /brokers/topics/<t> with a new topic id.
func (ad *adminState) createTopic(spec topicSpec, validateOnly bool, brokers []controller.BrokerMetadata) (createdTopic, error) {
	var out createdTopic
	if ad.metadata != nil && ad.metadata.Contains(spec.Name) {
		return out, newAPIError(kerr.TopicAlreadyExists, "Topic '%s' already exists.", spec.Name)
	}
	if len(spec.NullConfigs) > 0 {
		return out, newAPIError(kerr.InvalidRequest, "Null value not supported for topic configs : %s", strings.Join(spec.NullConfigs, ","))
	}
	if (spec.NumPartitions != -1 || spec.ReplicationFactor != -1) && len(spec.Assignment) > 0 {
		return out, newAPIError(kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
	}
	np, rf := spec.NumPartitions, spec.ReplicationFactor
	if np == -1 {
		np = ad.cfg.NumPartitions
	}
	if rf == -1 {
		rf = ad.cfg.DefaultReplicationFactor
	}
	assignment := spec.Assignment
	if len(assignment) == 0 {
		a, err := assignReplicas(brokers, np, rf, -1, -1)
		if err != nil {
			return out, err
		}
		assignment = a
	}

	// AdminZkClient.validateTopicCreate
	if err := validateTopicName(spec.Name); err != nil {
		return out, err
	}
	marked, err := ad.zk.GetTopicsMarkedForDeletion()
	if err != nil {
		return out, fmt.Errorf("read topics marked for deletion: %w", err)
	}
	for _, t := range marked {
		if t == spec.Name {
			return out, newAPIError(kerr.TopicAlreadyExists, "Topic '%s' is marked for deletion.", spec.Name)
		}
	}
	all, err := ad.zk.GetAllTopics()
	if err != nil {
		return out, fmt.Errorf("read topics: %w", err)
	}
	var colliding []string
	for _, t := range all {
		if t == spec.Name {
			return out, newAPIError(kerr.TopicAlreadyExists, "Topic '%s' already exists.", spec.Name)
		}
		if hasCollisionChars(spec.Name) && topicsCollide(spec.Name, t) {
			colliding = append(colliding, t)
		}
	}
	if len(colliding) > 0 {
		return out, newAPIError(kerr.InvalidTopicException, "Topic '%s' collides with existing topics: %s", spec.Name, strings.Join(colliding, ", "))
	}
	if err := validateAssignmentShape(assignment); err != nil {
		return out, err
	}
	if err := ad.validateTopicConfigs(spec.Configs); err != nil {
		return out, err
	}

	out.Assignment = assignment
	out.Overrides = spec.Configs
	if validateOnly {
		return out, nil
	}
	out.TopicID = zkmeta.NewUUID()
	err = ad.zk.CreateTopic(spec.Name, zkmeta.TopicAssignment{TopicID: out.TopicID, Partitions: assignment}, spec.Configs)
	if errors.Is(err, zkmeta.ErrTopicExists) || errors.Is(err, zkmeta.ErrNodeExists) {
		return createdTopic{}, newAPIError(kerr.TopicAlreadyExists, "Topic '%s' already exists.", spec.Name)
	}
	if err != nil {
		return createdTopic{}, fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	ad.log.WithFields(logrus.Fields{"topic": spec.Name, "partitions": len(assignment), "assignment": formatAssignment(assignment)}).
		Info("created topic")
	return out, nil
}

// AutoCreateTopic is the ZooKeeper-mode AutoTopicCreationManager: create topic with
// num.partitions and default.replication.factor, writing the znodes from this broker
// (any broker, not only the controller). Nil means created; Metadata then answers
// LEADER_NOT_AVAILABLE.
func (ad *adminState) AutoCreateTopic(ctx context.Context, topic string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	brokers, err := ad.liveBrokers()
	if err != nil {
		return err
	}
	_, err = ad.createTopic(ad.autoCreatableTopic(topic), false, brokers)
	return err
}

// autoCreatableTopic is AutoTopicCreationManager.creatableTopic: the internal topics get
// their own partition count, replication factor and configs (GroupCoordinator's
// groupMetadataTopicConfigs, TransactionCoordinator's transactionTopicConfigs).
func (ad *adminState) autoCreatableTopic(topic string) topicSpec {
	props := ad.cfg.Props
	switch topic {
	case "__consumer_offsets":
		return topicSpec{Name: topic, NumPartitions: ad.cfg.OffsetsTopicNumPartitions, ReplicationFactor: ad.cfg.OffsetsTopicReplicationFactor,
			Configs: map[string]string{
				"cleanup.policy":   "compact",
				"compression.type": "producer",
				"segment.bytes":    strconv.FormatInt(propInt(props, "offsets.topic.segment.bytes", 104857600), 10),
			}}
	case "__transaction_state":
		return topicSpec{Name: topic,
			NumPartitions:     int32(propInt(props, "transaction.state.log.num.partitions", 50)),
			ReplicationFactor: int16(propInt(props, "transaction.state.log.replication.factor", 3)),
			Configs: map[string]string{
				"cleanup.policy":                 "compact",
				"compression.type":               "uncompressed",
				"unclean.leader.election.enable": "false",
				"min.insync.replicas":            strconv.FormatInt(propInt(props, "transaction.state.log.min.isr", 2), 10),
				"segment.bytes":                  strconv.FormatInt(propInt(props, "transaction.state.log.segment.bytes", 104857600), 10),
			}}
	}
	return topicSpec{Name: topic, NumPartitions: ad.cfg.NumPartitions, ReplicationFactor: ad.cfg.DefaultReplicationFactor}
}

// missingLeaders counts the partitions of topic (those in parts) without a leader in the
// metadata cache (DelayedCreatePartitions.isMissingLeader).
func (ad *adminState) missingLeaders(topic string, parts []int32) int {
	n := 0
	for _, p := range parts {
		pm, ok := ad.metadata.Partition(logstore.TopicPartition{Topic: topic, Partition: p})
		if !ok || pm.Leader == NoLeader {
			n++
		}
	}
	return n
}

// waitFor blocks until done() is true, the timeout passes or ctx ends, re-checking after
// every metadata update. It reports whether done() held.
func (ad *adminState) waitFor(ctx context.Context, timeout time.Duration, done func() bool) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		ch := ad.metadataChanged.Wait()
		if done() {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return done()
		case <-ctx.Done():
			return done()
		}
	}
}
