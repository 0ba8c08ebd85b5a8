package logstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// RecordError names one record that failed validation (Produce v8+ record_errors).
type RecordError struct {
	BatchIndex int32 // index of the record within the batch
	Message    string
}

// RecordValidationError is Kafka's RecordValidationException: the append was refused
// because of individual records. Err is one of the package sentinels (ErrInvalidRecord,
// ErrInvalidTimestamp); errors.Is sees through it.
type RecordValidationError struct {
	Err     error
	Records []RecordError
}

func (e *RecordValidationError) Error() string {
	msgs := make([]string, 0, len(e.Records))
	for _, r := range e.Records {
		msgs = append(msgs, fmt.Sprintf("record %d: %s", r.BatchIndex, r.Message))
	}
	return fmt.Sprintf("%v: %s", e.Err, strings.Join(msgs, "; "))
}

func (e *RecordValidationError) Unwrap() error { return e.Err }

// ErrUnexpectedAppendOffset is returned by AppendAsFollower when the records start below the
// log end offset (Kafka's UnexpectedAppendOffsetException); the fetcher truncates and retries.
var ErrUnexpectedAppendOffset = errors.New("logstore: unexpected append offset")

// ErrOffsetsOutOfOrder is returned when a follower append's offsets are not increasing.
var ErrOffsetsOutOfOrder = errors.New("logstore: offsets out of order")

// batchErr maps a recordbatch parsing error to the Kafka-facing sentinel.
func batchErr(err error) error {
	switch {
	case errors.Is(err, recordbatch.ErrBadCodec):
		return fmt.Errorf("%w: %v", ErrInvalidRecord, err)
	default:
		return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
}
