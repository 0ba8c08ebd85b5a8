package zkmeta

// client_controller.go — KafkaZkClient's controller side: election (/controller,
// /controller_epoch), resignation, and the batched partition-state writes the controller
// fences with the controller epoch's zkVersion (createTopicPartitionStatesRaw,
// updateLeaderAndIsr), pipelined up to maxInFlight requests.

import (
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// TryElectController runs KafkaZkClient.registerControllerAndIncrementControllerEpoch: read
// /controller_epoch (creating it with "0" if absent), then one multi creating the ephemeral
// /controller and setting the epoch to E+1 conditional on the zkVersion read. Returns the new
// epoch and /controller_epoch's new zkVersion, which fences every later controller write.
// ErrControllerExists if another broker holds /controller; ErrControllerMoved if the epoch
// moved under us without a controller (retry on the next /controller event).
func (c *Client) TryElectController(brokerID int32) (epoch int32, epochZkVersion int32, err error) {
	if id, err := c.GetControllerID(); err != nil {
		return 0, 0, err
	} else if id != -1 {
		return 0, 0, fmt.Errorf("controller is broker %d: %w", id, ErrControllerExists)
	}
	cur, curVersion, err := c.GetControllerEpoch()
	if errors.Is(err, ErrNoNode) {
		cerr := c.CreateRecursive(ControllerEpochPath, EncodeControllerEpoch(0))
		if cerr != nil && !errors.Is(cerr, ErrNodeExists) {
			return 0, 0, cerr
		}
		cur, curVersion, err = c.GetControllerEpoch()
	}
	if err != nil {
		return 0, 0, err
	}
	newEpoch := cur + 1
	var res []zk.MultiResponse
	err = c.do(func() (err error) {
		res, err = c.multi("elect controller", ControllerPath,
			&zk.CreateRequest{Path: c.abs(ControllerPath), Data: EncodeController(brokerID, c.now().UnixMilli()),
				Acl: c.acls(ControllerPath), Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: c.abs(ControllerEpochPath), Data: EncodeControllerEpoch(newEpoch), Version: curVersion})
		return err
	})
	if err == nil {
		c.log.WithFields(logrus.Fields{"broker": brokerID, "controller_epoch": newEpoch, "epoch_zk_version": res[1].Stat.Version}).
			Info("elected controller")
		return newEpoch, res[1].Stat.Version, nil
	}
	if !errors.Is(err, ErrNodeExists) && !errors.Is(err, ErrBadVersion) {
		return 0, 0, err
	}
	// checkControllerAndEpoch: a retried multi that had succeeded looks like a failure.
	id, ierr := c.GetControllerID()
	e, v, eerr := c.GetControllerEpoch()
	if ierr == nil && eerr == nil && id == brokerID && e == newEpoch {
		return e, v, nil
	}
	if ierr == nil && id != -1 {
		return 0, 0, fmt.Errorf("controller is broker %d: %w", id, ErrControllerExists)
	}
	return 0, 0, fmt.Errorf("elect controller: epoch moved from %d: %w", cur, ErrControllerMoved)
}

// GetControllerID returns the broker id in /controller, or -1 if there is none.
func (c *Client) GetControllerID() (int32, error) {
	data, _, err := c.Get(ControllerPath)
	if errors.Is(err, ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	id, _, err := DecodeController(data)
	return id, err
}

// WatchController reads the controller id (-1 = none) and arms an exists watch on
// /controller (creation, data change, deletion), as every Kafka broker does.
func (c *Client) WatchController() (int32, <-chan Event, error) {
	exists, ch, err := c.ExistsW(ControllerPath)
	if err != nil {
		return -1, nil, err
	}
	if !exists {
		return -1, ch, nil
	}
	id, err := c.GetControllerID()
	return id, ch, err
}

// GetControllerEpoch reads /controller_epoch and its zkVersion. ErrNoNode if absent.
func (c *Client) GetControllerEpoch() (epoch, zkVersion int32, err error) {
	data, st, err := c.Get(ControllerEpochPath)
	if err != nil {
		return 0, 0, err
	}
	e, err := DecodeControllerEpoch(data)
	return e, st.Version, err
}

// ResignController deletes /controller if this session owns it (Kafka deletes it on
// controlled shutdown / resignation through session close; explicit here for tests and
// clean shutdown).
func (c *Client) ResignController(brokerID int32) error {
	data, st, err := c.Get(ControllerPath)
	if errors.Is(err, ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if id, _, _ := DecodeController(data); id != brokerID || st.EphemeralOwner != c.SessionID() {
		return nil
	}
	err = c.Delete(ControllerPath, st.Version)
	if errors.Is(err, ErrNoNode) || errors.Is(err, ErrBadVersion) {
		return nil
	}
	return err
}

// ---- batched controller writes (pipelined, as KafkaZkClient sends them asynchronously) ----

// CreatePartitionStates creates the state znodes of many partitions at once, as the
// controller does when partitions go New → Online (createTopicPartitionStatesRaw).
// Per-partition errors: nil = created, ErrNodeExists, ErrControllerMoved, ...
func (c *Client) CreatePartitionStates(states map[TopicPartition]PartitionState, ctrlEpochZkVersion int32) map[TopicPartition]error {
	out := make(map[TopicPartition]error, len(states))
	var mu sync.Mutex
	topics := map[string]bool{}
	for tp := range states {
		topics[tp.Topic] = true
	}
	topicErr := map[string]error{}
	for t := range topics {
		p := TopicPartitionsPath(t)
		_, err := c.checkedMulti("create", p, ctrlEpochZkVersion,
			&zk.CreateRequest{Path: c.abs(p), Data: nil, Acl: c.acls(p), Flags: zk.FlagPersistent})
		if err != nil && !errors.Is(err, ErrNodeExists) {
			topicErr[t] = err
		}
	}
	c.parallel(len(states), func(run func(func())) {
		for tp, s := range states {
			if err := topicErr[tp.Topic]; err != nil {
				out[tp] = err
				continue
			}
			run(func() {
				err := c.createPartitionState(tp.Topic, tp.Partition, s, ctrlEpochZkVersion, false)
				mu.Lock()
				out[tp] = err
				mu.Unlock()
			})
		}
	})
	return out
}

// StateWriteResult is the outcome of one partition's state update.
type StateWriteResult struct {
	ZkVersion int32 // the new partition epoch when Err is nil
	Err       error // ErrBadVersion (stale partition epoch: re-read), ErrControllerMoved, ErrNoNode, ...
}

// UpdatePartitionStates writes many partition states at once (KafkaZkClient.updateLeaderAndIsr):
// each conditional on its s.PartitionEpoch (the zkVersion read), all fenced by /controller_epoch.
func (c *Client) UpdatePartitionStates(states map[TopicPartition]PartitionState, ctrlEpochZkVersion int32) map[TopicPartition]StateWriteResult {
	out := make(map[TopicPartition]StateWriteResult, len(states))
	var mu sync.Mutex
	c.parallel(len(states), func(run func(func())) {
		for tp, s := range states {
			run(func() {
				v, err := c.UpdatePartitionState(tp.Topic, tp.Partition, s, s.PartitionEpoch, ctrlEpochZkVersion)
				mu.Lock()
				out[tp] = StateWriteResult{ZkVersion: v, Err: err}
				mu.Unlock()
			})
		}
	})
	return out
}

// maxInFlight bounds the pipelined requests of one batch. go-zookeeper pipelines them on the
// session's connection, so the window, not the CPU, bounds a 10,000-partition batch
// (measured on 2 cores, 10,000 partitions: 32 → 256 took a controlled shutdown from 4.9 s
// to 3.1 s and a controller failover from 3.0 s to 1.8 s).
const maxInFlight = 256

// parallel runs the jobs submitted through run with at most maxInFlight in flight, and waits for them.
func (c *Client) parallel(n int, submit func(run func(func()))) {
	if n == 0 {
		return
	}
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	submit(func(job func()) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			job()
		}()
	})
	wg.Wait()
}

// ---- /feature ----
