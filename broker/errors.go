package broker

// errors.go is the one table that turns internal errors into Kafka error codes at the wire
// (Kafka's Errors.forException; etcd's v3rpc/util.go does the same with one map). Handlers
// never pick codes for internal errors ad hoc: they call ErrorCode(err).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-kafka/samsa/logstore"
)

// Broker-level sentinels (ReplicaManager, Partition, MetadataCache). Wrap them with context;
// ErrorCode finds them with errors.Is.
var (
	ErrNotLeaderOrFollower      = errors.New("broker: not leader or follower")
	ErrUnknownTopicOrPartition  = errors.New("broker: unknown topic or partition")
	ErrUnknownTopicID           = errors.New("broker: unknown topic id")
	ErrLeaderNotAvailable       = errors.New("broker: leader not available")
	ErrFencedLeaderEpoch        = errors.New("broker: fenced leader epoch")
	ErrUnknownLeaderEpoch       = errors.New("broker: unknown leader epoch")
	ErrNotEnoughReplicas        = errors.New("broker: not enough replicas")
	ErrNotEnoughReplicasAfter   = errors.New("broker: not enough replicas after append")
	ErrInvalidRequiredAcks      = errors.New("broker: invalid required acks")
	ErrReplicaNotAvailable      = errors.New("broker: replica not available")
	ErrStaleControllerEpoch     = errors.New("broker: stale controller epoch")
	ErrStaleBrokerEpoch         = errors.New("broker: stale broker epoch")
	ErrInvalidTopic             = errors.New("broker: invalid topic")
	ErrInvalidRequest           = errors.New("broker: invalid request")
	ErrRequestTimedOut          = errors.New("broker: request timed out")
	ErrOffsetNotAvailable       = errors.New("broker: offset not available")
	ErrUnsupportedCompression   = errors.New("broker: unsupported compression type")
	ErrFetchSessionIDNotFound   = errors.New("broker: fetch session id not found")
	ErrInvalidFetchSessionEpoch = errors.New("broker: invalid fetch session epoch")
	ErrPolicyViolation          = errors.New("broker: policy violation")
)

// errorTable maps sentinels to codes; first match by errors.Is wins, so more specific
// errors come first where one wraps another.
var errorTable = []struct {
	err  error
	code *kerr.Error
}{
	// logstore
	{logstore.ErrCorruptMessage, kerr.CorruptMessage},
	{logstore.ErrMessageTooLarge, kerr.MessageTooLarge},
	{logstore.ErrRecordListTooLarge, kerr.RecordListTooLarge},
	{logstore.ErrInvalidRecord, kerr.InvalidRecord},
	{logstore.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{logstore.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{logstore.ErrUnsupportedForMagic, kerr.UnsupportedForMessageFormat},
	{logstore.ErrKafkaStorage, kerr.KafkaStorageError},
	{logstore.ErrInvalidConfig, kerr.InvalidConfig},
	{logstore.ErrClosed, kerr.NotLeaderForPartition}, // the log went away under us: the partition moved or was deleted
	{logstore.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{logstore.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{logstore.ErrInvalidTxnState, kerr.InvalidTxnState},
	{logstore.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},

	// broker
	{ErrNotLeaderOrFollower, kerr.NotLeaderForPartition},
	{ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{ErrUnknownTopicID, kerr.UnknownTopicID},
	{ErrLeaderNotAvailable, kerr.LeaderNotAvailable},
	{ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{ErrNotEnoughReplicasAfter, kerr.NotEnoughReplicasAfterAppend},
	{ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
	{ErrReplicaNotAvailable, kerr.ReplicaNotAvailable},
	{ErrStaleControllerEpoch, kerr.StaleControllerEpoch},
	{ErrStaleBrokerEpoch, kerr.StaleBrokerEpoch},
	{ErrInvalidTopic, kerr.InvalidTopicException},
	{ErrInvalidRequest, kerr.InvalidRequest},
	{ErrRequestTimedOut, kerr.RequestTimedOut},
	{ErrOffsetNotAvailable, kerr.OffsetNotAvailable},
	{ErrUnsupportedCompression, kerr.UnsupportedCompressionType},
	{ErrFetchSessionIDNotFound, kerr.FetchSessionIDNotFound},
	{ErrPolicyViolation, kerr.PolicyViolation},
	{ErrInvalidFetchSessionEpoch, kerr.InvalidFetchSessionEpoch},

	// a request that outlived its deadline (purgatory timers use their own path)
	{context.DeadlineExceeded, kerr.RequestTimedOut},
}

// ErrorCode returns the Kafka error code for err: 0 for nil, the code of a *kerr.Error
// anywhere in the chain (other packages may return Kafka errors directly, e.g.
// kerr.InvalidReplicationFactor), the table's code for a known sentinel, and
// UNKNOWN_SERVER_ERROR (-1) for anything else.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// ErrorMessage returns the message to put in a response's ErrorMessage field: nil for nil,
// otherwise the error text (Kafka sends the exception message).
func ErrorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
