package controller

// The event loop: the thin I/O layer around the decisions in decisions.go. It mirrors
// KafkaController's process(event), onControllerFailover, the online-partition state change
// and the parts of Partition/ReplicaStateMachine that read and write ZooKeeper. The broker
// handlers are in broker_changes.go, the topic handlers in topic_changes.go.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// store is the part of zkmeta.Client the controller uses (an in-memory fake in tests).
type store interface {
	WatchController() (int32, <-chan zkmeta.Event, error)
	ChildrenW(path string) ([]string, <-chan zkmeta.Event, error)
	GetBroker(id int32) (zkmeta.BrokerInfo, error)
	GetW(path string) ([]byte, int32, <-chan zkmeta.Event, error)
	Get(path string) ([]byte, zkmeta.Stat, error)
	GetAllTopicsW() ([]string, <-chan zkmeta.Event, error)
	GetTopic(name string) (zkmeta.TopicAssignment, int32, error)
	GetTopicW(name string) (zkmeta.TopicAssignment, int32, <-chan zkmeta.Event, error)
	SetTopicAssignmentAsController(name string, a zkmeta.TopicAssignment, ctrlEpochZkVersion int32) (int32, error)
	GetTopicConfig(name string) (map[string]string, error)
	GetPartitionState(topic string, p int32) (zkmeta.PartitionState, error)
	GetPartitionStatesBatch(tps []zkmeta.TopicPartition) map[zkmeta.TopicPartition]zkmeta.PartitionStateResult
	CreatePartitionStates(states map[zkmeta.TopicPartition]zkmeta.PartitionState, ctrlEpochZkVersion int32) map[zkmeta.TopicPartition]error
	UpdatePartitionStates(states map[zkmeta.TopicPartition]zkmeta.PartitionState, ctrlEpochZkVersion int32) map[zkmeta.TopicPartition]zkmeta.StateWriteResult
	UpdatePartitionState(topic string, p int32, s zkmeta.PartitionState, expectedZkVersion, ctrlEpochZkVersion int32) (int32, error)
	DeleteTopicDeletionMarker(name string, ctrlEpochZkVersion int32) error
	DeleteTopicZNodes(name string, ctrlEpochZkVersion int32) error
	EnsureFeatureZNode() (zkmeta.FeatureZNode, error)
	ExistsW(path string) (bool, <-chan zkmeta.Event, error)
	GetReassignment() ([]zkmeta.ReassignmentEntry, error)
	SetReassignmentAsController(entries []zkmeta.ReassignmentEntry, ctrlEpochZkVersion int32) error
	GetPreferredReplicaElection() ([]zkmeta.TopicPartition, error)
	DeleteAsController(ctrlEpochZkVersion int32, paths ...string) error
	// SessionID is the current ZooKeeper session (0 while expired): a term belongs to the
	// session it was elected in.
	SessionID() int64
}

// maxElectionAttempts bounds the re-read-and-retry rounds after BADVERSION conflicts.
const maxElectionAttempts = 5

// errResign ends the loop: this broker is no longer controller. errControllerChanged (with
// errResign) says /controller no longer names this broker: a normal end, campaign at once.
var (
	errResign            = errors.New("controller: resigning")
	errControllerChanged = errors.New("controller: /controller changed")
)

// eventLoop is one term as active controller. Only its goroutine touches ctx.
type eventLoop struct {
	cfg      Config
	zk       store
	channels brokerChannels
	ctx      *controllerContext
	queue    *eventQueue
	log      *logrus.Entry
	stateLog *logrus.Entry // component=state.change, like Kafka's state-change log

	watchCtx context.Context // cancelled when the term ends; stops the watch goroutines
	watchWG  sync.WaitGroup
	// dataWatches holds the znode paths with an armed, not yet fired data watch (topics,
	// brokers), so a re-read does not arm a second one.
	dataWatches    map[string]bool
	rebalanceTimer *time.Timer        // next auto leader rebalance check; stopped when the term ends
	done           chan struct{}      // closed when the term has ended (events still queued are dropped)
	metrics        *controllerMetrics // nil when not registered (tests)
	events         *eventTracker      // what the internals view shows (eventqueue_stats.go); nil in tests
	// session is the ZooKeeper session this term was elected in. Once it is gone the term
	// ends before the next event or write (Kafka blocks the new session until its Expire
	// event resigned the controller): nothing is done on a later session.
	session int64
}

// checkSession fails once the term's session is gone (expired, or replaced by a new one).
func (l *eventLoop) checkSession() error {
	return sessionGuard{l.zk, l.session}.check()
}

// stopTimers stops the term's timers (after run returned).
func (l *eventLoop) stopTimers() {
	if l.rebalanceTimer != nil {
		l.rebalanceTimer.Stop()
	}
}

func newEventLoop(cfg Config, zk store, channels brokerChannels, epoch, epochZkVersion int32, watchCtx context.Context) *eventLoop {
	log := cfg.Log.WithField("controller_epoch", epoch)
	session := zk.SessionID()
	return &eventLoop{
		cfg: cfg, zk: sessionGuard{zk, session}, channels: channels,
		ctx:      newControllerContext(epoch, epochZkVersion),
		queue:    newEventQueue(),
		log:      log,
		stateLog: log.WithField("component", "state.change"),
		watchCtx: watchCtx,
		done:     make(chan struct{}),
		session:  session,

		dataWatches: map[string]bool{},
	}
}

// watch turns a one-shot ZooKeeper watch into an event. A watch dropped by session expiry
// becomes expireEvent.
func (l *eventLoop) watch(ch <-chan zkmeta.Event, ev event) {
	if ch == nil {
		return
	}
	l.watchWG.Add(1)
	go func() {
		defer l.watchWG.Done()
		select {
		case <-l.watchCtx.Done():
		case zev, ok := <-ch:
			if ok && zev.Type == zkmeta.EventNotWatching && errors.Is(zev.Err, zkmeta.ErrSessionExpired) {
				l.queue.put(expireEvent{})
				return
			}
			l.queue.put(ev)
		}
	}()
}

// run processes events until the term ends (resignation or ctx done). sessionEvents may be nil.
func (l *eventLoop) run(ctx context.Context, sessionEvents <-chan zkmeta.SessionEvent) error {
	l.queue.put(startupEvent{})
	// sessionEnded says whether a session event ends this term. Expiry of an older session
	// (an event left from an earlier term) does not.
	sessionEnded := func(se zkmeta.SessionEvent, ok bool) error {
		if !ok {
			return fmt.Errorf("%w: zookeeper client closed", errResign)
		}
		if se.Type == zkmeta.SessionExpired && se.SessionID == l.session {
			l.log.Warn("zookeeper session expired; resigning as controller")
			return fmt.Errorf("%w: session expired", errResign)
		}
		return nil
	}
	for {
		evs, enqueued := l.queue.takeTimed()
		l.events.took(evs, enqueued)
		for i, ev := range evs {
			// Session loss first: no event is processed once the session is gone, even if
			// its notice is still queued behind the events (select picks at random).
			select {
			case se, ok := <-sessionEvents:
				if err := sessionEnded(se, ok); err != nil {
					return err
				}
			default:
			}
			if err := l.checkSession(); err != nil {
				l.log.WithError(err).Warn("zookeeper session lost; resigning as controller")
				return err
			}
			start := l.metrics.dequeued(ev, enqueued[i])
			l.events.begin(start)
			err := l.process(ev)
			l.events.end(err)
			l.metrics.processed(ev, start, l.ctx)
			if err != nil {
				return err
			}
		}
		l.metrics.caughtUp(l.ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case se, ok := <-sessionEvents:
			if err := sessionEnded(se, ok); err != nil {
				return err
			}
		case <-l.queue.signal:
		}
	}
}

// process handles one event. A non-nil error ends the term.
func (l *eventLoop) process(ev event) error {
	l.log.WithField("event", ev.String()).Debug("processing controller event")
	switch e := ev.(type) {
	case partitionModificationsEvent:
		delete(l.dataWatches, zkmeta.TopicPath(e.topic)) // it fired
	case brokerModificationEvent:
		delete(l.dataWatches, zkmeta.BrokerIDPath(e.id))
	}
	var err error
	switch e := ev.(type) {
	case startupEvent:
		// Kafka resigns (and re-elects) when failover fails: a half-loaded controller with
		// missing watches must not stay active.
		if err = l.onControllerFailover(); err != nil && !isFatal(err) {
			err = fmt.Errorf("%w: failover: %w", errResign, err)
		}
	case brokerChangeEvent:
		err = l.onBrokerChange()
	case brokerModificationEvent:
		err = l.onBrokerModification(e.id)
	case topicChangeEvent:
		err = l.onTopicChange()
	case partitionModificationsEvent:
		err = l.onPartitionModifications(e.topic)
	case topicDeletionEvent:
		err = l.onTopicDeletion()
	case stopReplicaResponseEvent:
		err = l.onStopReplicaResponse(e.broker, e.req, e.resp)
	case leaderAndIsrResponseEvent:
		err = l.onLeaderAndIsrResponse(e.broker, e.resp)
	case logDirEventNotificationEvent:
		err = l.onLogDirEventNotification()
	case controllerChangeEvent:
		err = l.onControllerChange()
	case electLeadersEvent:
		var resp *kmsg.ElectLeadersResponse
		resp, err = l.onElectLeaders(e.req)
		if resp == nil {
			resp = electLeadersError(e.req, notControllerCode)
		}
		e.reply <- resp
	case apiPartitionReassignmentEvent:
		var res map[TopicPartition]*reassignmentError
		res, err = l.onApiPartitionReassignment(e)
		if err == nil {
			e.reply <- res
		}
	case listPartitionReassignmentsEvent:
		e.reply <- l.onListPartitionReassignments(e.filter)
	case topicUncleanLeaderElectionEnableEvent:
		err = l.onTopicUncleanLeaderElectionEnable(e.topic)
	case uncleanLeaderElectionEnableEvent:
		err = l.onUncleanLeaderElectionEnable(e.enable)
	case probeEvent:
		e.fn(l)
		close(e.done)
	case zkPreferredReplicaElectionEvent:
		err = l.onZkPreferredReplicaElection()
	case zkPartitionReassignmentEvent:
		_, err = l.onZkPartitionReassignment()
	case partitionReassignmentIsrChangeEvent:
		err = l.onPartitionReassignmentIsrChange(e.tp)
	case autoPreferredReplicaLeaderElectionEvent:
		err = l.onAutoPreferredReplicaLeaderElection()
	case expireEvent:
		err = fmt.Errorf("%w: session expired", errResign)
	case controlledShutdownEvent:
		var resp *kmsg.ControlledShutdownResponse
		resp, err = l.onControlledShutdown(e.req)
		if resp == nil {
			resp = controlledShutdownError(e.req, kerr.StaleControllerEpoch.Code)
		}
		e.reply <- resp
	case alterPartitionEvent:
		var resp *kmsg.AlterPartitionResponse
		resp, err = l.onAlterPartition(e.req)
		if resp == nil {
			resp = alterPartitionError(e.req, notControllerCode)
		}
		e.reply <- resp
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, errResign) || errors.Is(err, zkmeta.ErrControllerMoved) || errors.Is(err, zkmeta.ErrSessionExpired) || errors.Is(err, zkmeta.ErrClosed) {
		l.log.WithError(err).WithField("event", ev.String()).Warn("controller moved or session lost; resigning")
		return fmt.Errorf("%w: %w", errResign, err)
	}
	// Kafka logs and carries on: the next event re-reads what it needs.
	l.log.WithError(err).WithField("event", ev.String()).Error("error processing controller event")
	return nil
}

// sendBatch builds a batch's requests from the current context and queues them.
func (l *eventLoop) sendBatch(b *requestBatch) {
	for _, r := range b.build(l.ctx, l.cfg.BrokerID, l.cfg.InterBrokerListenerName) {
		broker := r.broker
		var cb func(kmsg.Response)
		switch req := r.req.(type) {
		case *kmsg.LeaderAndISRRequest:
			cb = func(resp kmsg.Response) {
				l.logLeaderAndIsrResponse(broker, resp)
				// LeaderAndIsrResponseReceived: the loop reads the partition errors.
				if r, ok := resp.(*kmsg.LeaderAndISRResponse); ok && r.ErrorCode == 0 {
					l.queue.put(leaderAndIsrResponseEvent{broker: broker, resp: r})
				}
			}
		case *kmsg.StopReplicaRequest:
			if req.DeletePartitions || stopReplicaDeletes(req) {
				cb = func(resp kmsg.Response) { l.queue.put(stopReplicaResponseEvent{broker: broker, req: req, resp: resp}) }
			}
		}
		l.channels.send(broker, r.req, cb)
	}
}

// logLeaderAndIsrResponse runs on a sender goroutine: it only logs.
func (l *eventLoop) logLeaderAndIsrResponse(broker int32, resp kmsg.Response) {
	r, ok := resp.(*kmsg.LeaderAndISRResponse)
	if !ok {
		return
	}
	if r.ErrorCode != 0 {
		l.log.WithFields(logrus.Fields{"target_broker": broker, "error_code": r.ErrorCode}).Warn("LeaderAndIsr failed")
		return
	}
	logErr := func(f logrus.Fields, code int16) {
		if code == 0 {
			return
		}
		f["target_broker"], f["error_code"] = broker, code
		// Kafka's controller acts only on KAFKA_STORAGE_ERROR; others (e.g. STALE_CONTROLLER_EPOCH
		// for a leader epoch the broker already has, normal after a failover) are routine.
		if code == kerr.KafkaStorageError.Code {
			l.log.WithFields(f).Warn("LeaderAndIsr partition error")
		} else {
			l.log.WithFields(f).Debug("LeaderAndIsr partition error")
		}
	}
	for _, p := range r.Partitions { // v0-4
		logErr(logrus.Fields{"topic": p.Topic, "partition": p.Partition}, p.ErrorCode)
	}
	for _, t := range r.Topics { // v5+: by topic id
		for _, p := range t.Partitions {
			logErr(logrus.Fields{"topic_id": zkmeta.TopicIDString(t.TopicID), "partition": p.Partition}, p.ErrorCode)
		}
	}
}

// ---- failover ----

// onControllerFailover loads the cluster from ZooKeeper, registers the watches and brings
// every partition online (KafkaController.onControllerFailover).
func (l *eventLoop) onControllerFailover() error {
	l.log.Info("controller failover: loading cluster state")
	id, ch, err := l.zk.WatchController()
	if err != nil {
		return err
	}
	l.watch(ch, controllerChangeEvent{})
	if id != l.cfg.BrokerID {
		return fmt.Errorf("%w: /controller is broker %d", errResign, id)
	}
	// maybeSetupFeatureVersioning: /feature enabled (IBP >= 2.7-IV0) or disabled (features.go).
	if err := l.setupFeatureVersioning(); err != nil {
		return err
	}
	// Pending log dir events are dropped (the LeaderAndIsr sent to every broker below finds
	// the offline replicas); reading the children arms the watch.
	if err := l.deleteLogDirEventNotifications(); err != nil {
		return err
	}

	changes, err := l.refreshLiveBrokers()
	if err != nil {
		return err
	}
	l.ctx.liveBrokers = changes.current
	topics, ch, err := l.zk.GetAllTopicsW()
	if err != nil {
		return err
	}
	l.watch(ch, topicChangeEvent{})
	for _, t := range topics {
		if err := l.loadTopic(t); err != nil {
			if isFatal(err) {
				return err
			}
			continue // logged by loadTopic; the topic is skipped
		}
		if err := l.loadPartitionStates(t); err != nil {
			return err
		}
	}
	if err := l.readTopicDeletions(); err != nil {
		return err
	}
	for _, tp := range l.ctx.allPartitions() {
		l.ctx.partitionStates[tp] = l.ctx.initialPartitionState(tp)
	}

	// UpdateMetadata with the live brokers to every broker.
	b := newRequestBatch()
	b.addUpdateMetadata(l.ctx.liveOrShuttingDownBrokerIDs(), nil)
	l.sendBatch(b)

	// ReplicaStateMachine.startup: live replicas → OnlineReplica (LeaderAndIsr), then
	// replicas on dead brokers → OfflineReplica (removed from the ISR).
	b = newRequestBatch()
	for _, id := range l.ctx.liveOrShuttingDownBrokerIDs() {
		for _, tp := range l.ctx.partitionsOnBroker(id) {
			if _, ok := l.ctx.partitionLeadership[tp]; ok && !l.ctx.topicsToDelete[tp.Topic] {
				b.addLeaderAndIsr(l.ctx, []int32{id}, tp, false)
			}
		}
	}
	l.sendBatch(b)
	if err := l.offlineReplicas(l.deadReplicaHolders()); err != nil {
		return err
	}

	// PartitionStateMachine.startup, then TopicDeletionManager.init.
	if err := l.triggerOnlinePartitionStateChange(); err != nil {
		return err
	}
	if err := l.initializePartitionReassignments(); err != nil {
		return err
	}
	if err := l.onZkPreferredReplicaElection(); err != nil {
		return err
	}
	if err := l.resumeDeletions(); err != nil {
		return err
	}
	l.scheduleAutoRebalance(firstRebalanceDelay)
	l.log.WithFields(logrus.Fields{"live_brokers": l.ctx.liveOrShuttingDownBrokerIDs(), "topics": len(l.ctx.topics)}).Info("controller failover complete")
	return nil
}

// deadReplicaHolders returns the assigned brokers that are not live, sorted.
func (l *eventLoop) deadReplicaHolders() []int32 {
	seen := map[int32]bool{}
	for _, tp := range l.ctx.allPartitions() {
		for _, r := range l.ctx.replicas(tp) {
			if !l.ctx.isRegistered(r) {
				seen[r] = true
			}
		}
	}
	return sortedKeys(seen)
}

func isFatal(err error) bool {
	return errors.Is(err, errResign) || errors.Is(err, zkmeta.ErrControllerMoved) ||
		errors.Is(err, zkmeta.ErrSessionExpired) || errors.Is(err, zkmeta.ErrClosed)
}

// loadTopic reads a topic's assignment (arming its data watch), adds a topic id if it has
// none, and reads its unclean.leader.election.enable override. A malformed znode is logged
// with its path and the topic skipped.
func (l *eventLoop) loadTopic(name string) error {
	var a zkmeta.TopicAssignment
	var version int32
	var err error
	if path := zkmeta.TopicPath(name); l.dataWatches[path] {
		a, version, err = l.zk.GetTopic(name)
	} else {
		var ch <-chan zkmeta.Event
		a, version, ch, err = l.zk.GetTopicW(name)
		if ch != nil {
			l.dataWatches[path] = true
			l.watch(ch, partitionModificationsEvent{topic: name})
		}
	}
	if err != nil {
		if !isFatal(err) && !errors.Is(err, zkmeta.ErrNoNode) {
			l.log.WithError(err).WithFields(logrus.Fields{"topic": name, "zk_path": zkmeta.TopicPath(name)}).Error("cannot read topic; skipping it")
		}
		return err
	}
	if a.TopicID == ([16]byte{}) {
		a.TopicID = zkmeta.NewUUID()
		v, err := l.zk.SetTopicAssignmentAsController(name, a, l.ctx.epochZkVersion)
		if err != nil {
			return err
		}
		version = v
		l.log.WithFields(logrus.Fields{"topic": name, "topic_id": zkmeta.TopicIDString(a.TopicID)}).Info("assigned topic id")
	}
	t := &topicInfo{id: a.TopicID, zkVersion: version, assignment: a.Partitions, adding: a.Adding, removing: a.Removing}
	if old := l.ctx.topics[name]; old != nil {
		t.unclean = old.unclean
	}
	cfg, err := l.zk.GetTopicConfig(name)
	if err != nil {
		if isFatal(err) {
			return err
		}
		l.log.WithError(err).WithFields(logrus.Fields{"topic": name, "zk_path": zkmeta.TopicConfigPath(name)}).Warn("cannot read topic config")
	}
	if v, ok := cfg["unclean.leader.election.enable"]; ok {
		if b, perr := strconv.ParseBool(v); perr == nil {
			t.unclean = &b
		}
	}
	l.ctx.topics[name] = t
	return nil
}

// loadPartitionStates reads the state znode of every partition of a topic into the context.
func (l *eventLoop) loadPartitionStates(topic string) error {
	t := l.ctx.topics[topic]
	if t == nil {
		return nil
	}
	var tps []TopicPartition
	for p := range t.assignment {
		tps = append(tps, TopicPartition{topic, p})
	}
	slices.SortFunc(tps, compareTP)
	return l.refreshPartitionStates(tps)
}

// refreshPartitionStates re-reads partition state znodes (Kafka reads them before every
// election). A malformed znode is logged with its path and its topic dropped from the
// context, so every decision skips it (they all need the partition's state).
func (l *eventLoop) refreshPartitionStates(tps []TopicPartition) error {
	// Many partitions: pipelined reads (one round trip per partition would dominate a
	// 10,000-partition failover or broker failure).
	var batch map[zkmeta.TopicPartition]zkmeta.PartitionStateResult
	if len(tps) > 1 {
		keys := make([]zkmeta.TopicPartition, 0, len(tps))
		for _, tp := range tps {
			if l.ctx.topics[tp.Topic] != nil {
				keys = append(keys, zkmeta.TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
			}
		}
		batch = l.zk.GetPartitionStatesBatch(keys)
	}
	for _, tp := range tps {
		if l.ctx.topics[tp.Topic] == nil {
			continue // skipped (malformed) or gone
		}
		var st zkmeta.PartitionState
		var err error
		if batch != nil {
			r := batch[zkmeta.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}]
			st, err = r.State, r.Err
		} else {
			st, err = l.zk.GetPartitionState(tp.Topic, tp.Partition)
		}
		switch {
		case err == nil:
			l.ctx.partitionLeadership[tp] = st
		case errors.Is(err, zkmeta.ErrNoNode):
			delete(l.ctx.partitionLeadership, tp)
		case isFatal(err):
			return err
		case errors.Is(err, zkmeta.ErrBadJSON):
			// Malformed JSON: the topic is skipped (nothing is decided or sent for it) until
			// its znodes change or the next failover reads it again.
			l.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition,
				"zk_path": zkmeta.PartitionStatePath(tp.Topic, tp.Partition)}).Error("malformed partition state; skipping topic")
			l.forgetTopic(tp.Topic)
		default:
			l.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition,
				"zk_path": zkmeta.PartitionStatePath(tp.Topic, tp.Partition)}).Error("cannot read partition state")
		}
	}
	return nil
}

// ---- brokers ----

// triggerOnlinePartitionStateChange moves every New and Offline partition (not being deleted)
// to OnlinePartition.
func (l *eventLoop) triggerOnlinePartitionStateChange() error {
	var newParts, offline []TopicPartition
	for _, tp := range l.ctx.partitionsInStates(NewPartition, OfflinePartition) {
		if l.ctx.topicsToDelete[tp.Topic] {
			continue
		}
		if l.ctx.partitionStates[tp] == NewPartition {
			newParts = append(newParts, tp)
		} else {
			offline = append(offline, tp)
		}
	}
	b := newRequestBatch()
	if len(newParts) > 0 {
		if err := l.initializeNewPartitions(newParts, b); err != nil {
			return err
		}
	}
	if err := l.electOffline(offline, false, b); err != nil {
		return err
	}
	l.sendBatch(b)
	return nil
}

// electOffline runs the offline election for tps, re-reading their states first and retrying
// BADVERSION conflicts.
func (l *eventLoop) electOffline(tps []TopicPartition, forceUnclean bool, b *requestBatch) error {
	for attempt := 0; len(tps) > 0 && attempt < maxElectionAttempts; attempt++ {
		if err := l.refreshPartitionStates(tps); err != nil {
			return err
		}
		ups, failed := l.ctx.decideOfflineElection(tps, l.cfg.UncleanLeaderElectionEnable, forceUnclean)
		for _, f := range failed {
			l.stateLog.WithFields(logrus.Fields{"topic": f.tp.Topic, "partition": f.tp.Partition, "reason": f.why}).
				Error("failed to elect leader for offline partition")
		}
		retry, err := l.applyUpdates(ups, b)
		if err != nil {
			return err
		}
		tps = retry
	}
	return nil
}

// applyUpdates performs decided writes in order. A successful write updates the context and
// adds LeaderAndIsr (and UpdateMetadata) to b. Returns the partitions to retry after a
// BADVERSION conflict; ErrControllerMoved ends the term.
func (l *eventLoop) applyUpdates(ups []partitionUpdate, b *requestBatch) (retry []TopicPartition, err error) {
	// All writes go out at once, pipelined (KafkaZkClient's async multi requests); results
	// are applied in the decided order so the context and the requests are deterministic.
	creates := map[zkmeta.TopicPartition]zkmeta.PartitionState{}
	updates := map[zkmeta.TopicPartition]zkmeta.PartitionState{}
	for _, up := range ups {
		k := zkmeta.TopicPartition{Topic: up.tp.Topic, Partition: up.tp.Partition}
		if up.create {
			creates[k] = up.state
		} else {
			updates[k] = up.state
		}
	}
	var createRes map[zkmeta.TopicPartition]error
	var updateRes map[zkmeta.TopicPartition]zkmeta.StateWriteResult
	if len(creates) > 0 {
		createRes = l.zk.CreatePartitionStates(creates, l.ctx.epochZkVersion)
	}
	if len(updates) > 0 {
		updateRes = l.zk.UpdatePartitionStates(updates, l.ctx.epochZkVersion)
	}
	var fatal error
	for _, up := range ups {
		k := zkmeta.TopicPartition{Topic: up.tp.Topic, Partition: up.tp.Partition}
		st := up.state
		if up.create {
			err = createRes[k]
			if errors.Is(err, zkmeta.ErrNodeExists) {
				// Another controller term created it first: adopt what is there.
				if rerr := l.refreshPartitionStates([]TopicPartition{up.tp}); rerr != nil {
					return nil, rerr
				}
				if _, ok := l.ctx.partitionLeadership[up.tp]; ok {
					l.ctx.partitionStates[up.tp] = l.ctx.initialPartitionState(up.tp)
					b.addLeaderAndIsr(l.ctx, up.recipients, up.tp, up.isNew)
				}
				continue
			}
			st.PartitionEpoch = 0
		} else {
			res := updateRes[k]
			err = res.Err
			if errors.Is(err, zkmeta.ErrBadVersion) {
				retry = append(retry, up.tp)
				continue
			}
			st.PartitionEpoch = res.ZkVersion
		}
		if err != nil {
			if isFatal(err) {
				if fatal == nil {
					fatal = err
				}
				continue
			}
			l.stateLog.WithError(err).WithFields(logrus.Fields{"topic": up.tp.Topic, "partition": up.tp.Partition}).
				Error("failed to write partition state")
			continue
		}
		before := l.ctx.partitionStates[up.tp]
		l.ctx.partitionLeadership[up.tp] = st
		l.ctx.partitionStates[up.tp] = up.after
		if up.why == "unclean offline partition election" {
			l.metrics.uncleanElection()
		}
		l.stateLog.WithFields(logrus.Fields{"topic": up.tp.Topic, "partition": up.tp.Partition, "from": before.String(),
			"to": up.after.String(), "leader": st.Leader, "leader_epoch": st.LeaderEpoch, "isr": st.ISR,
			"partition_epoch": st.PartitionEpoch, "reason": up.why}).Info("partition state changed")
		b.addLeaderAndIsr(l.ctx, up.recipients, up.tp, up.isNew)
	}
	if fatal != nil {
		// The term ends; what was written before the fence is in the context, nothing is sent.
		return nil, fatal
	}
	return retry, nil
}

func (l *eventLoop) stateChange(tp TopicPartition, from, to PartitionState, why string) {
	l.stateLog.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "from": from.String(),
		"to": to.String(), "reason": why}).Info("partition state changed")
}

// onControllerChange: /controller changed; resign if it is no longer this broker.
func (l *eventLoop) onControllerChange() error {
	id, ch, err := l.zk.WatchController()
	if err != nil {
		return err
	}
	l.watch(ch, controllerChangeEvent{})
	if id != l.cfg.BrokerID {
		return fmt.Errorf("%w: %w: /controller is now broker %d", errResign, errControllerChanged, id)
	}
	return nil
}
