package msgset

import (
	"errors"
	"testing"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// FuzzDecode: any input either decodes or fails with ErrCorrupt / ErrInvalid (never a
// panic or another error), and what decodes converts to a valid batch holding the same
// records. The seeds in testdata/fuzz/FuzzDecode cover each codec and the error paths.
func FuzzDecode(f *testing.F) {
	f.Add(encMsg(0, 0, 0, 0, []byte("k"), []byte("v")))
	f.Add(encMsg(7, 1, 0, 1234, nil, []byte("v")))
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalid) && !errors.Is(err, recordbatch.ErrTooLarge) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if len(msgs) == 0 {
			return
		}
		b, err := ToBatch(msgs, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		if err := recordbatch.Validate(b); err != nil {
			t.Fatalf("converted batch invalid: %v", err)
		}
		i := 0
		err = b.ForEachRecord(false, func(r *recordbatch.Record) error {
			m := msgs[i]
			if string(r.Key) != string(m.Key) || (r.Key == nil) != (m.Key == nil) || string(r.Value) != string(m.Value) ||
				(r.Value == nil) != (m.Value == nil) || b.BaseTimestamp()+r.TimestampDelta != m.Timestamp {
				t.Fatalf("record %d differs from message %+v", i, m)
			}
			i++
			return nil
		})
		if err != nil || i != len(msgs) {
			t.Fatalf("read %d of %d records: %v", i, len(msgs), err)
		}
	})
}
