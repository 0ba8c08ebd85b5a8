package logstore

import (
	"errors"
	"fmt"
)

// TopicPartition names one partition's log, as Kafka's TopicPartition does.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Errors the broker maps to Kafka error codes (broker/errors.go holds that one table).
var (
	ErrCorruptMessage      = errors.New("logstore: corrupt message")            // CORRUPT_MESSAGE (2)
	ErrMessageTooLarge     = errors.New("logstore: message too large")          // MESSAGE_TOO_LARGE (10)
	ErrRecordListTooLarge  = errors.New("logstore: record list too large")      // RECORD_LIST_TOO_LARGE (18)
	ErrInvalidRecord       = errors.New("logstore: invalid record")             // INVALID_RECORD (87)
	ErrInvalidTimestamp    = errors.New("logstore: invalid timestamp")          // INVALID_TIMESTAMP (32)
	ErrOffsetOutOfRange    = errors.New("logstore: offset out of range")        // OFFSET_OUT_OF_RANGE (1)
	ErrUnsupportedForMagic = errors.New("logstore: unsupported message format") // UNSUPPORTED_FOR_MESSAGE_FORMAT (43)
	ErrKafkaStorage        = errors.New("logstore: log dir offline")            // KAFKA_STORAGE_ERROR (56)
	ErrInvalidConfig       = errors.New("logstore: invalid config")             // INVALID_CONFIG (40)
	ErrLogDirLocked        = errors.New("logstore: log dir is locked by another process")
	ErrMetaMismatch        = errors.New("logstore: meta.properties does not match this broker")
	ErrClosed              = errors.New("logstore: log closed")

	// Idempotent producer state (producer_state.go).
	ErrOutOfOrderSequence   = errors.New("logstore: out of order sequence number") // OUT_OF_ORDER_SEQUENCE_NUMBER (45)
	ErrInvalidProducerEpoch = errors.New("logstore: invalid producer epoch")       // INVALID_PRODUCER_EPOCH (47)

	// Transactions (txn.go).
	ErrInvalidTxnState              = errors.New("logstore: invalid transaction state")      // INVALID_TXN_STATE (48)
	ErrTransactionCoordinatorFenced = errors.New("logstore: transaction coordinator fenced") // TRANSACTION_COORDINATOR_FENCED (52)
)
