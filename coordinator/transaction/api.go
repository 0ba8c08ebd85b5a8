package transaction

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Log is the part of the broker the coordinator uses: its view of the __transaction_state
// partitions. Errors carry a Kafka error (errors.As to *kerr.Error); anything else counts
// as UNKNOWN_SERVER_ERROR.
type Log interface {
	// LeaderEpoch reports whether this broker leads the partition, and its leader epoch.
	LeaderEpoch(partition int32) (epoch int32, isLeader bool)
	// Append appends one batch as leader with acks=-1 (waits for the HW) or times out.
	Append(ctx context.Context, partition int32, batch []byte, timeout time.Duration) (int64, error)
	// Offsets returns the partition's log start and log end offsets.
	Offsets(partition int32) (logStart, logEnd int64, err error)
	// Read returns raw batches from offset (at least one batch) up to the log end offset.
	Read(partition int32, offset int64, maxBytes int32) ([]byte, error)
}

// ProducerIDGenerator hands out producer ids (Kafka's ProducerIdManager).
type ProducerIDGenerator interface {
	GenerateProducerID() (int64, error)
}

// MarkerSender is how the marker channel manager reaches partition leaders.
type MarkerSender interface {
	// Leader is the current leader broker of topic-partition from the metadata cache.
	Leader(topic string, partition int32) (brokerID int32, ok bool)
	// Send sends WriteTxnMarkers to brokerID (inter-broker listener) and returns the response.
	Send(ctx context.Context, brokerID int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
}

// Config holds the coordinator's settings; zero values take Kafka's defaults.
type Config struct {
	BrokerID                  int32
	NumPartitions             int32         // transaction.state.log.num.partitions (50)
	MaxTimeout                time.Duration // transaction.max.timeout.ms (15 min)
	TransactionalIDExpiration time.Duration // transactional.id.expiration.ms (7 d)
	AbortTimedOutInterval     time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s)
	RemoveExpiredInterval     time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms (1 h)
	RequestTimeout            time.Duration // request.timeout.ms (30 s) for markers and appends
	LoadBufferSize            int32         // transaction.state.log.load.buffer.size (5 MiB)
	Clock                     func() time.Time
	Logger                    *logrus.Entry
}

// TransactionDescription is one entry of DescribeTransactions.
type TransactionDescription struct {
	TransactionalID string
	ErrCode         int16
	State           string // Kafka's names: Empty, Ongoing, PrepareCommit, ...
	ProducerID      int64
	ProducerEpoch   int16
	TimeoutMs       int32
	StartTimestamp  int64
	Partitions      map[string][]int32
}

// TransactionListing is one entry of ListTransactions.
type TransactionListing struct {
	TransactionalID string
	ProducerID      int64
	State           string
}
