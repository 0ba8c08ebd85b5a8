package broker

// webview_segments_test.go: the segments page on a real broker: every segment with its
// index entry counts and timestamps, a segment's index and time-index entries page by page,
// the producer snapshot written at a roll, the .txnindex of an aborted transaction, and 4xx
// answers to bad input.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestWebViewSegmentDetail(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"samsa.http.listener": "127.0.0.1:0",
		"transaction.state.log.num.partitions": "1", "transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr": "1"})
	waitController(t, b)
	addr := b.Addr("PLAINTEXT")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An index entry for every batch but a segment's first, and a roll every ~20 KB (~250 batches: two pages of index entries).
	adm := kadm.NewClient(kgoClient(t, addr))
	if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"index.interval.bytes": kmsg.StringPtr("0"),
		"segment.bytes": kmsg.StringPtr("20000")}, "wvs"); err != nil || r.Err != nil {
		t.Fatalf("create wvs: %v %v", err, r.Err)
	}
	idem, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("wvs"))
	if err != nil {
		t.Fatal(err)
	}
	defer idem.Close()
	const n = 300
	for i := 0; i < n; i++ { // one batch each
		if err := idem.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("value-%03d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("wvs"), kgo.TransactionalID("wvs-tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}

	base := "http://" + b.HTTPAddr() + "/segments?topic=wvs&partition=0"
	var sd webSegmentsData
	// EndTransaction returns once the abort is prepared; the marker follows (WriteTxnMarkers).
	adminWaitFor(t, 10*time.Second, "the ABORT marker appended", func() bool {
		webJSON(t, base+"&format=json", &sd)
		return sd.LogEndOffset == n+2
	})
	if len(sd.Segments) < 2 || sd.SegmentCount != len(sd.Segments) || sd.LogEndOffset != n+2 || sd.Size <= 0 {
		t.Fatalf("segments: %d of %d, LEO %d (want ≥ 2 segments, LEO %d)", len(sd.Segments), sd.SegmentCount, sd.LogEndOffset, n+2)
	}
	first, last := sd.Segments[0], sd.Segments[len(sd.Segments)-1]
	// A closed segment of one-record batches: an entry for each but the first.
	if first.Active || first.BaseOffset != 0 || first.IndexEntries != first.NextOffset-1 || first.TimeIndexEntries < 1 ||
		first.FirstTimestamp <= 0 || first.LargestTimestamp < first.FirstTimestamp || first.FirstBatchMaxTimestamp != first.FirstTimestamp {
		t.Errorf("first segment %+v", first)
	}
	if !last.Active || last.NextOffset != sd.LogEndOffset || !last.TxnIndex || last.AbortedTxns != 1 || last.IndexSlots <= last.IndexEntries {
		t.Errorf("active segment %+v", last)
	}
	// A roll writes the producer snapshot at the new segment's base offset; the idempotent
	// producer is in it (ProducerStateManager.takeSnapshot).
	if len(sd.Producers) != 2 {
		t.Fatalf("live producers %+v", sd.Producers)
	}
	idemPID := sd.Producers[0].ProducerID
	found := false
	for _, s := range sd.ProducerSnapshots {
		if s.Offset == sd.Segments[1].BaseOffset && s.File == fmt.Sprintf("%020d.snapshot", s.Offset) && s.Producers == 1 &&
			len(s.Entries) == 1 && s.Entries[0].ProducerID == idemPID && s.Entries[0].LastOffset == s.Offset-1 &&
			s.Entries[0].LastSequence == int32(s.Offset-1) && s.Entries[0].TxnStartOffset == -1 {
			found = true
		}
	}
	if !found {
		t.Errorf("no snapshot at offset %d with producer %d: %+v", sd.Segments[1].BaseOffset, idemPID, sd.ProducerSnapshots)
	}

	// The first segment's indexes, page by page.
	var page0, page1 webSegmentsData
	webJSON(t, base+"&segment=0&format=json", &page0)
	d := page0.Segment
	if d == nil || d.Pages != (first.IndexEntries+webIndexPageSize-1)/webIndexPageSize || len(d.Offsets) != int(min(first.IndexEntries, webIndexPageSize)) ||
		d.Offsets[0].Offset != 1 || d.Offsets[0].Position <= 0 || d.IndexFile != "00000000000000000000.index" || d.TxnIndex || len(page0.Segments) != 0 {
		t.Fatalf("segment 0 page 0: %+v", d)
	}
	for i := 1; i < len(d.Offsets); i++ {
		if d.Offsets[i].Offset != d.Offsets[i-1].Offset+1 || d.Offsets[i].Position <= d.Offsets[i-1].Position {
			t.Fatalf("index entries %d, %d: %+v %+v", i-1, i, d.Offsets[i-1], d.Offsets[i])
		}
	}
	if len(d.Times) == 0 || d.Times[0].Timestamp < first.FirstTimestamp || d.Times[0].Offset < 1 {
		t.Errorf("time index page 0: %+v", d.Times)
	}
	if d.Pages < 2 {
		t.Fatalf("segment 0 has %d index entries: one page", first.IndexEntries)
	}
	webJSON(t, base+"&segment=0&page=1&format=json", &page1)
	if p := page1.Segment; p == nil || p.FirstEntry != webIndexPageSize || len(p.Offsets) == 0 || p.Offsets[0].Offset != webIndexPageSize+1 {
		t.Errorf("segment 0 page 1: %+v", p)
	}
	var active webSegmentsData
	webJSON(t, fmt.Sprintf("%s&segment=%d&format=json", base, last.BaseOffset), &active)
	if a := active.Segment; a == nil || len(a.Aborted) != 1 || a.Aborted[0].ProducerID == idemPID || a.Aborted[0].FirstOffset != n ||
		a.Aborted[0].LastOffset != n+1 || a.TxnIndexFile != fmt.Sprintf("%020d.txnindex", last.BaseOffset) {
		t.Errorf("active segment's txnindex: %+v", a)
	}
	code, body := webGet(t, "GET", base)
	if code != 200 || !strings.Contains(body, "kafka.log.ProducerStateManager") || !strings.Contains(body, "&amp;segment=0\"") {
		t.Errorf("segments page: %d\n%s", code, body)
	}
	code, body = webGet(t, "GET", base+"&segment=0")
	if code != 200 || !strings.Contains(body, "kafka.log.OffsetIndex") || !strings.Contains(body, "kafka.log.TimeIndex") ||
		!strings.Contains(body, "/follow?topic=wvs&amp;partition=0&amp;offset=1\"") {
		t.Errorf("segment page: %d\n%s", code, body)
	}

	// Without a partition: the partitions this broker holds.
	var hosted []webPartition
	webJSON(t, "http://"+b.HTTPAddr()+"/segments?format=json", &hosted)
	if i := slices.IndexFunc(hosted, func(p webPartition) bool { return p.Topic == "wvs" }); i < 0 ||
		hosted[i].LogEndOffset != n+2 || !hosted[i].IsLeader {
		t.Errorf("/segments lists %+v", hosted)
	}
	if code, body := webGet(t, "GET", "http://"+b.HTTPAddr()+"/segments"); code != 200 ||
		!strings.Contains(body, `href="/segments?topic=wvs&amp;partition=0"`) {
		t.Errorf("/segments: %d\n%s", code, body)
	}

	for _, c := range []struct {
		q    string
		want int
	}{
		{"&segment=1", 404},                   // not a base offset
		{"&segment=99999999999", 404},         // beyond the log
		{"&segment=0&page=999999", 404},       // past the last page
		{"&segment=0&page=2147483648", 400},   // out of range
		{"&segment=0&page=-1", 400},           //
		{"&segment=-1", 400},                  //
		{"&segment=9223372036854775808", 400}, // overflows int64
		{"&segment=x", 400},                   //
		{"&segment=", 400},                    //
		{"&page=1", 400},                      // page without segment
		{"&segment=0%2F..%2F..", 400},         //
	} {
		if code, body := webGet(t, "GET", base+c.q); code != c.want {
			t.Errorf("%s = %d, want %d: %s", c.q, code, c.want, body)
		}
	}
}
