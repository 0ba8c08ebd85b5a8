package controller

// A term acts only in the ZooKeeper session it was elected in. Kafka gets this by blocking
// the new session (ZooKeeperClient's beforeInitializingSession) until the controller has
// processed Expire and resigned; go-zookeeper re-creates the session by itself, so instead
// every ZooKeeper call of the term checks that the term's session is still the client's
// (reads before and after: a read may wait for the reconnection and run in the next
// session). The ZooKeeper-side fence of writes is zkmeta's checkedMulti (/controller_epoch
// version and /controller present); this guard also keeps a deposed term from deciding or
// sending anything from what it reads in a later session.

import (
	"fmt"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// errSessionLost ends a term whose ZooKeeper session is gone.
var errSessionLost = fmt.Errorf("%w: zookeeper session of this term ended", errResign)

// sessionGuard is the term's store: writes fail with errSessionLost once the session the
// term was elected in is gone (expired, or replaced by a new one).
type sessionGuard struct {
	store
	session int64
}

func (g sessionGuard) check() error {
	if sid := g.store.SessionID(); sid != g.session {
		return fmt.Errorf("%w (session 0x%x, now 0x%x)", errSessionLost, g.session, sid)
	}
	return nil
}

func (g sessionGuard) SetTopicAssignmentAsController(name string, a zkmeta.TopicAssignment, ctrlEpochZkVersion int32) (int32, error) {
	if err := g.check(); err != nil {
		return 0, err
	}
	return g.store.SetTopicAssignmentAsController(name, a, ctrlEpochZkVersion)
}

func (g sessionGuard) CreatePartitionStates(states map[zkmeta.TopicPartition]zkmeta.PartitionState, ctrlEpochZkVersion int32) map[zkmeta.TopicPartition]error {
	if err := g.check(); err != nil {
		out := make(map[zkmeta.TopicPartition]error, len(states))
		for tp := range states {
			out[tp] = err
		}
		return out
	}
	return g.store.CreatePartitionStates(states, ctrlEpochZkVersion)
}

func (g sessionGuard) UpdatePartitionStates(states map[zkmeta.TopicPartition]zkmeta.PartitionState, ctrlEpochZkVersion int32) map[zkmeta.TopicPartition]zkmeta.StateWriteResult {
	if err := g.check(); err != nil {
		out := make(map[zkmeta.TopicPartition]zkmeta.StateWriteResult, len(states))
		for tp := range states {
			out[tp] = zkmeta.StateWriteResult{Err: err}
		}
		return out
	}
	return g.store.UpdatePartitionStates(states, ctrlEpochZkVersion)
}

func (g sessionGuard) UpdatePartitionState(topic string, p int32, s zkmeta.PartitionState, expectedZkVersion, ctrlEpochZkVersion int32) (int32, error) {
	if err := g.check(); err != nil {
		return 0, err
	}
	return g.store.UpdatePartitionState(topic, p, s, expectedZkVersion, ctrlEpochZkVersion)
}

func (g sessionGuard) DeleteTopicDeletionMarker(name string, ctrlEpochZkVersion int32) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.store.DeleteTopicDeletionMarker(name, ctrlEpochZkVersion)
}

func (g sessionGuard) DeleteTopicZNodes(name string, ctrlEpochZkVersion int32) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.store.DeleteTopicZNodes(name, ctrlEpochZkVersion)
}

// Reads are checked before and after: a read that waited for a reconnection may have run
// in the next session, and nothing read there may drive this term's decisions or requests.

func (g sessionGuard) WatchController() (int32, <-chan zkmeta.Event, error) {
	if err := g.check(); err != nil {
		return -1, nil, err
	}
	id, ch, err := g.store.WatchController()
	if err == nil {
		err = g.check()
	}
	if err != nil {
		return -1, nil, err
	}
	return id, ch, nil
}

func (g sessionGuard) ChildrenW(path string) ([]string, <-chan zkmeta.Event, error) {
	if err := g.check(); err != nil {
		return nil, nil, err
	}
	kids, ch, err := g.store.ChildrenW(path)
	if err == nil {
		err = g.check()
	}
	if err != nil {
		return nil, nil, err
	}
	return kids, ch, nil
}

func (g sessionGuard) GetBroker(id int32) (zkmeta.BrokerInfo, error) {
	if err := g.check(); err != nil {
		return zkmeta.BrokerInfo{}, err
	}
	b, err := g.store.GetBroker(id)
	if err == nil {
		err = g.check()
	}
	return b, err
}

func (g sessionGuard) GetW(path string) ([]byte, int32, <-chan zkmeta.Event, error) {
	if err := g.check(); err != nil {
		return nil, 0, nil, err
	}
	data, v, ch, err := g.store.GetW(path)
	if err == nil {
		err = g.check()
	}
	if err != nil {
		return nil, 0, nil, err
	}
	return data, v, ch, nil
}

func (g sessionGuard) GetAllTopicsW() ([]string, <-chan zkmeta.Event, error) {
	if err := g.check(); err != nil {
		return nil, nil, err
	}
	ts, ch, err := g.store.GetAllTopicsW()
	if err == nil {
		err = g.check()
	}
	if err != nil {
		return nil, nil, err
	}
	return ts, ch, nil
}

func (g sessionGuard) GetTopic(name string) (zkmeta.TopicAssignment, int32, error) {
	if err := g.check(); err != nil {
		return zkmeta.TopicAssignment{}, 0, err
	}
	a, v, err := g.store.GetTopic(name)
	if serr := g.check(); serr != nil {
		return zkmeta.TopicAssignment{}, 0, serr
	}
	return a, v, err
}

func (g sessionGuard) GetTopicW(name string) (zkmeta.TopicAssignment, int32, <-chan zkmeta.Event, error) {
	if err := g.check(); err != nil {
		return zkmeta.TopicAssignment{}, 0, nil, err
	}
	// A malformed topic still arms its watch (ch with err): keep that.
	a, v, ch, err := g.store.GetTopicW(name)
	if serr := g.check(); serr != nil {
		return zkmeta.TopicAssignment{}, 0, nil, serr
	}
	return a, v, ch, err
}

func (g sessionGuard) GetTopicConfig(name string) (map[string]string, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	cfg, err := g.store.GetTopicConfig(name)
	if serr := g.check(); serr != nil {
		return nil, serr
	}
	return cfg, err
}

func (g sessionGuard) GetPartitionState(topic string, p int32) (zkmeta.PartitionState, error) {
	if err := g.check(); err != nil {
		return zkmeta.PartitionState{}, err
	}
	st, err := g.store.GetPartitionState(topic, p)
	if serr := g.check(); serr != nil {
		return zkmeta.PartitionState{}, serr
	}
	return st, err
}

func (g sessionGuard) ExistsW(path string) (bool, <-chan zkmeta.Event, error) {
	if err := g.check(); err != nil {
		return false, nil, err
	}
	ok, ch, err := g.store.ExistsW(path)
	if err == nil {
		err = g.check()
	}
	if err != nil {
		return false, nil, err
	}
	return ok, ch, nil
}

func (g sessionGuard) GetReassignment() ([]zkmeta.ReassignmentEntry, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	e, err := g.store.GetReassignment()
	if serr := g.check(); serr != nil {
		return nil, serr
	}
	return e, err
}

func (g sessionGuard) SetReassignmentAsController(entries []zkmeta.ReassignmentEntry, ctrlEpochZkVersion int32) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.store.SetReassignmentAsController(entries, ctrlEpochZkVersion)
}

func (g sessionGuard) GetPreferredReplicaElection() ([]zkmeta.TopicPartition, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	e, err := g.store.GetPreferredReplicaElection()
	if serr := g.check(); serr != nil {
		return nil, serr
	}
	return e, err
}

func (g sessionGuard) Get(path string) ([]byte, zkmeta.Stat, error) {
	if err := g.check(); err != nil {
		return nil, zkmeta.Stat{}, err
	}
	data, st, err := g.store.Get(path)
	if serr := g.check(); serr != nil {
		return nil, zkmeta.Stat{}, serr
	}
	return data, st, err
}

func (g sessionGuard) DeleteAsController(ctrlEpochZkVersion int32, paths ...string) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.store.DeleteAsController(ctrlEpochZkVersion, paths...)
}

func (g sessionGuard) GetPartitionStatesBatch(tps []zkmeta.TopicPartition) map[zkmeta.TopicPartition]zkmeta.PartitionStateResult {
	fail := func(err error) map[zkmeta.TopicPartition]zkmeta.PartitionStateResult {
		out := make(map[zkmeta.TopicPartition]zkmeta.PartitionStateResult, len(tps))
		for _, tp := range tps {
			out[tp] = zkmeta.PartitionStateResult{Err: err}
		}
		return out
	}
	if err := g.check(); err != nil {
		return fail(err)
	}
	res := g.store.GetPartitionStatesBatch(tps)
	if err := g.check(); err != nil {
		return fail(err)
	}
	return res
}
