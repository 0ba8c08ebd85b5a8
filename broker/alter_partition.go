package broker

// alter_partition.go mirrors kafka.server.AlterPartitionManager: a partition leader's ISR
// proposals go to the active controller (from the metadata cache, on the inter-broker
// listener) as AlterPartition requests, one request in flight at a time, carrying every
// proposal not yet sent (alter_partition_batch.go). Request-level failures (no controller
// known, connection errors, NOT_CONTROLLER, STALE_BROKER_EPOCH) are retried with a short
// backoff while the proposal is still the partition's pending one; the partition-level
// answer goes to Partition.handleAlterPartitionResult.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/kclient"
)

// alterPartitionRetryBackoff is Kafka's AlterPartitionManager retry delay (50 ms in 3.7's
// ControllerRequestCompletionHandler; we use a little more on a loaded machine).
const alterPartitionRetryBackoff = 100 * time.Millisecond

type alterPartitionManager struct {
	rm  *ReplicaManager
	log *logrus.Entry

	mu    sync.Mutex
	ctx   context.Context // nil before start and after wait
	wg    sync.WaitGroup
	batch alterPartitionBatch // guarded by mu (alter_partition_batch.go)

	connMu sync.Mutex // one request in flight; guards conn, connTo
	conn   *kclient.Conn
	connTo int32
}

func newAlterPartitionManager(rm *ReplicaManager) *alterPartitionManager {
	return &alterPartitionManager{rm: rm, log: rm.log.WithField("component", "alter.partition")}
}

func (a *alterPartitionManager) start(ctx context.Context) {
	a.mu.Lock()
	a.ctx = ctx
	a.mu.Unlock()
}

// wait stops taking proposals and waits for those in flight (their ctx is cancelled).
func (a *alterPartitionManager) wait() {
	a.mu.Lock()
	a.ctx = nil
	a.mu.Unlock()
	a.wg.Wait()
	a.connMu.Lock()
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
	a.connMu.Unlock()
}

// submit and the sender that batches the proposals are in alter_partition_batch.go.

// handleAlterPartitionResponse passes the partition's answer in resp to p; false if resp
// does not have it.
func handleAlterPartitionResponse(p *Partition, prop *isrProposal, resp *kmsg.AlterPartitionResponse) bool {
	for _, t := range resp.Topics {
		if t.Topic != prop.tp.Topic && t.TopidID != prop.topicID {
			continue
		}
		for _, rp := range t.Partitions {
			if rp.Partition == prop.tp.Partition {
				p.handleAlterPartitionResult(prop, alterPartitionResult{code: rp.ErrorCode, leaderEpoch: rp.LeaderEpoch,
					partitionEpoch: rp.PartitionEpoch, isr: slices.Clone(rp.ISR)})
				return true
			}
		}
	}
	return false
}

// send sends req to the active controller over the manager's connection (one in flight).
func (a *alterPartitionManager) send(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	a.connMu.Lock()
	defer a.connMu.Unlock()
	md := a.rm.cfg.Metadata
	id := md.ControllerID()
	if id < 0 {
		return nil, fmt.Errorf("no controller known")
	}
	if a.conn != nil && a.connTo != id {
		a.conn.Close()
		a.conn = nil
	}
	if a.conn == nil {
		b, ok := md.Broker(id)
		if !ok {
			return nil, fmt.Errorf("controller %d not in the metadata cache", id)
		}
		ep, ok := b.Endpoint(a.rm.fetchers.cfg.Listener)
		if !ok {
			return nil, fmt.Errorf("controller %d has no %s endpoint", id, a.rm.fetchers.cfg.Listener)
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := a.rm.cfg.Dialer.Dial(dctx, net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), fmt.Sprintf("broker-%d-alter-partition", a.rm.cfg.BrokerID))
		cancel()
		if err != nil {
			return nil, err
		}
		a.conn, a.connTo = c, id
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := a.conn.Request(rctx, req)
	if err != nil {
		a.conn.Close()
		a.conn = nil
		return nil, err
	}
	return r.(*kmsg.AlterPartitionResponse), nil
}

// alterPartitionRequest is the AlterPartition request for one proposal.
func (rm *ReplicaManager) alterPartitionRequest(prop *isrProposal) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = rm.cfg.BrokerID, rm.brokerEpoch()
	t := kmsg.NewAlterPartitionRequestTopic()
	t.Topic, t.TopicID = prop.tp.Topic, prop.topicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = prop.tp.Partition, prop.leaderEpoch, prop.partitionEpoch
	rp.NewISR = slices.Clone(prop.newISR)
	for _, id := range prop.newISR {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = id, prop.brokerEpochs[id]
		if id == rm.cfg.BrokerID {
			e.BrokerEpoch = rm.brokerEpoch()
		}
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	return req
}
