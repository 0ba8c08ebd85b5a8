// Package msgset reads and writes Kafka's legacy message sets: message format v0 (magic 0,
// Kafka 0.8-0.9) and v1 (magic 1, Kafka 0.10, with a timestamp), and converts between them
// and record batches (magic 2, Kafka 0.11+). A 3.x broker keeps only magic 2 in its logs; it
// up-converts what old producers send (Produce v0-v2) and down-converts what old consumers
// fetch (Fetch v0-v3), as Kafka's LogValidator and RecordsUtil.downConvert do.
//
// A message on the wire (LegacyRecord in Kafka):
//
//	offset       int64
//	message_size int32   bytes that follow
//	crc          uint32  IEEE CRC-32 of everything after it
//	magic        int8    0 or 1
//	attributes   int8    bits 0-2 codec, bit 3 timestamp type (magic 1 only)
//	timestamp    int64   magic 1 only
//	key          bytes   int32 length, -1 = null
//	value        bytes   int32 length, -1 = null
//
// A compressed message set is one "wrapper" message whose value is the compressed bytes of
// the inner message set. In magic 1 the inner offsets are relative (0, 1, 2...) and the
// wrapper carries the absolute offset of the last inner message; in magic 0 the inner
// offsets are absolute.
package msgset

// Magic values.
const (
	MagicV0 int8 = 0
	MagicV1 int8 = 1
)

// Attribute bits of a legacy message.
const (
	AttrCodecMask     int8 = 0x07
	AttrLogAppendTime int8 = 0x08 // magic 1: the timestamp is the broker's append time
)

// Sizes of a legacy message's fixed parts (LegacyRecord.RECORD_OVERHEAD_V0/V1 plus the log
// overhead of offset and size).
const (
	LogOverhead      = 8 + 4                // offset, message_size
	RecordOverheadV0 = 4 + 1 + 1 + 4 + 4    // crc, magic, attributes, key length, value length
	RecordOverheadV1 = RecordOverheadV0 + 8 // plus timestamp
	MinMessageSizeV0 = LogOverhead + RecordOverheadV0
	MinMessageSizeV1 = LogOverhead + RecordOverheadV1
)

// NoTimestamp is RecordBatch.NO_TIMESTAMP: magic 0 messages carry none.
const NoTimestamp int64 = -1

// Message is one legacy message as read from or written to a message set. For a compressed
// wrapper, Value holds the compressed bytes; Entry.Deep (decode.go) opens it into the inner
// messages with absolute offsets.
type Message struct {
	Offset     int64
	Magic      int8
	Attributes int8
	Timestamp  int64 // NoTimestamp for magic 0
	Key        []byte
	Value      []byte // nil = null (a tombstone)
}

// Codec is the compression codec in a message's attributes (same numbering as batches).
func (m *Message) Codec() int8 { return m.Attributes & AttrCodecMask }

// LogAppendTime reports whether a magic 1 message's timestamp is the log append time.
func (m *Message) LogAppendTime() bool {
	return m.Magic >= MagicV1 && m.Attributes&AttrLogAppendTime != 0
}
