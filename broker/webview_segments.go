package broker

// webview_segments.go — the internals view's segments page: one partition's log as this
// broker holds it on disk. The list shows every kafka.log.LogSegment (base offset, size,
// first and largest timestamps, how many entries its indexes hold), the leader-epoch
// checkpoint, the producer-state snapshots with their entries and the live producer state;
// ?segment=<base offset>&page=<n> opens one segment: a page of its OffsetIndex and TimeIndex
// entries and its TransactionIndex (aborted transactions). Files are read through logstore's
// read-only inspectors (logstore/inspect.go): nothing is opened for writing or mapped.

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"github.com/samsa-kafka/samsa/logstore"
)

// Bounds of one answer, so a page stays small however large the log grows.
const (
	webIndexPageSize     = 200  // index and time-index entries per page of ?segment=
	webMaxAbortedShown   = 1000 // aborted transactions shown for a segment
	webMaxSnapshotShown  = 100  // producers shown per snapshot file
	webMaxSnapshotsRead  = 10   // newest snapshot files whose entries are read
	webMaxSegmentsListed = 2000 // segments listed (the newest are kept)
)

// webSegment is one kafka.log.LogSegment: its .log file and the index files beside it.
type webSegment struct {
	BaseOffset int64 `json:"base_offset"`
	NextOffset int64 `json:"next_offset"`
	Size       int64 `json:"size"`
	// FirstTimestamp is the first batch's base timestamp, FirstBatchMaxTimestamp its max
	// (LogSegment.rollingBasedTimestamp), LargestTimestamp LogSegment.largestTimestamp;
	// -1 when the segment is empty.
	FirstTimestamp         int64  `json:"first_timestamp"`
	FirstBatchMaxTimestamp int64  `json:"first_batch_max_timestamp"`
	LargestTimestamp       int64  `json:"largest_timestamp"`
	LastModified           string `json:"last_modified"`
	Active                 bool   `json:"active"`
	File                   string `json:"file"`
	IndexEntries           int64  `json:"index_entries"`     // OffsetIndex.entries
	IndexSlots             int64  `json:"index_slots"`       // OffsetIndex.maxEntries (preallocated while active)
	TimeIndexEntries       int64  `json:"timeindex_entries"` // TimeIndex.entries
	TxnIndex               bool   `json:"txnindex"`          // the .txnindex file exists
	AbortedTxns            int    `json:"aborted_txns"`
}

// webProducer is one producer's entry, in a snapshot file or the live ProducerStateManager.
type webProducer struct {
	ProducerID       int64 `json:"producer_id"`
	ProducerEpoch    int16 `json:"producer_epoch"`
	LastSequence     int32 `json:"last_sequence"`
	LastOffset       int64 `json:"last_offset"`
	LastTimestamp    int64 `json:"last_timestamp"`
	CoordinatorEpoch int32 `json:"coordinator_epoch"`
	TxnStartOffset   int64 `json:"txn_start_offset"` // currentTxnFirstOffset; -1: no open transaction
}

// webSnapshot is one <offset>.snapshot file (ProducerStateManager.takeSnapshot).
type webSnapshot struct {
	Offset    int64         `json:"offset"`
	File      string        `json:"file"`
	Producers int           `json:"producers"` // entries in the file; -1 when not read
	Entries   []webProducer `json:"entries"`   // the first webMaxSnapshotShown
	Error     string        `json:"error,omitempty"`
}

// webAborted is one .txnindex entry (kafka.log.AbortedTxn).
type webAborted struct {
	ProducerID       int64 `json:"producer_id"`
	FirstOffset      int64 `json:"first_offset"`
	LastOffset       int64 `json:"last_offset"`
	LastStableOffset int64 `json:"last_stable_offset"`
}

// webSegmentDetail is one segment opened with ?segment=: a page of each index.
type webSegmentDetail struct {
	webSegment
	Page          int64                       `json:"page"`
	Pages         int64                       `json:"pages"`
	PageSize      int64                       `json:"page_size"`
	FirstEntry    int64                       `json:"first_entry"` // entry number of the page's first row
	IndexFile     string                      `json:"index_file"`
	TimeIndexFile string                      `json:"timeindex_file"`
	TxnIndexFile  string                      `json:"txnindex_file"`
	Offsets       []logstore.OffsetIndexEntry `json:"index"`
	Times         []logstore.TimeIndexEntry   `json:"timeindex"`
	Aborted       []webAborted                `json:"aborted"`
	AbortedTotal  int                         `json:"aborted_total"`
}

type webSegmentsData struct {
	Topic          string       `json:"topic"`
	Partition      int32        `json:"partition"`
	Dir            string       `json:"dir"`
	LogStartOffset int64        `json:"log_start_offset"`
	LogEndOffset   int64        `json:"log_end_offset"`
	HighWatermark  int64        `json:"high_watermark"`
	Size           int64        `json:"size"`
	SegmentCount   int          `json:"segment_count"`
	Segments       []webSegment `json:"segments"`
	// LeaderEpochs is leader-epoch-checkpoint (kafka.server.epoch.LeaderEpochFileCache).
	LeaderEpochs      []logstore.EpochEntry `json:"leader_epochs"`
	ProducerSnapshots []webSnapshot         `json:"producer_snapshots"`
	Producers         []webProducer         `json:"producers"` // live ProducerStateManager.activeProducers
	Segment           *webSegmentDetail     `json:"segment,omitempty"`
}

var webSegmentsTmpl = template.Must(template.New("segments").Funcs(template.FuncMap{
	"ts":   webTimestamp,
	"prev": func(p int64) int64 { return p - 1 },
	"next": func(p int64) int64 { return p + 1 },
	"row":  func(first int64, i int) int64 { return first + int64(i) },
}).Parse(`
{{$t := .Topic}}{{$p := .Partition}}
<p>{{.Topic}}-{{.Partition}} in <code>{{.Dir}}</code>: log start {{.LogStartOffset}}, log end offset {{.LogEndOffset}}, high watermark {{.HighWatermark}},
{{.SegmentCount}} segments, {{.Size}} bytes <span class="src">(kafka.log.UnifiedLog, kafka.log.LocalLog)</span></p>
{{with .Segment}}
<h2>segment {{.BaseOffset}} <span class="src">(kafka.log.LogSegment)</span></h2>
<p><a href="/segments?topic={{$t}}&amp;partition={{$p}}">all segments</a> · <code>{{.File}}</code> · {{.Size}} bytes · offsets {{.BaseOffset}} – {{.NextOffset}} (next) ·
first timestamp {{ts .FirstTimestamp}} · largest timestamp {{ts .LargestTimestamp}}{{if .Active}} · <b>active</b>{{end}}</p>
<p>page {{.Page}} of {{.Pages}} ({{.PageSize}} entries a page){{if gt .Page 0}} · <a href="/segments?topic={{$t}}&amp;partition={{$p}}&amp;segment={{.BaseOffset}}&amp;page={{prev .Page}}">previous</a>{{end}}{{if lt (next .Page) .Pages}} · <a href="/segments?topic={{$t}}&amp;partition={{$p}}&amp;segment={{.BaseOffset}}&amp;page={{next .Page}}">next</a>{{end}}</p>
<h3>offset index <code>{{.IndexFile}}</code>: {{.IndexEntries}} entries of {{.IndexSlots}} slots</h3>
<p class="src">kafka.log.OffsetIndex: 8 bytes an entry (offset − base offset as int32, .log position as int32), one entry every index.interval.bytes of batches; OffsetIndex.lookup binary-searches it</p>
<table><tr><th>#</th><th>offset</th><th>position</th></tr>
{{$f := .FirstEntry}}{{range $i, $e := .Offsets}}<tr><td>{{row $f $i}}</td><td><a href="/follow?topic={{$t}}&amp;partition={{$p}}&amp;offset={{$e.Offset}}">{{$e.Offset}}</a></td><td>{{$e.Position}}</td></tr>
{{else}}<tr><td colspan="3">no entries on this page</td></tr>{{end}}</table>
<h3>time index <code>{{.TimeIndexFile}}</code>: {{.TimeIndexEntries}} entries</h3>
<p class="src">kafka.log.TimeIndex: 12 bytes an entry (timestamp as int64, offset − base offset as int32), added when a batch raises the segment's max timestamp; TimeIndex.lookup serves ListOffsets by time</p>
<table><tr><th>#</th><th>timestamp</th><th>offset</th></tr>
{{range $i, $e := .Times}}<tr><td>{{row $f $i}}</td><td>{{ts $e.Timestamp}}</td><td>{{$e.Offset}}</td></tr>
{{else}}<tr><td colspan="3">no entries on this page</td></tr>{{end}}</table>
<h3>transaction index <code>{{.TxnIndexFile}}</code></h3>
<p class="src">kafka.log.TransactionIndex: 34 bytes an entry (version, producer id, first offset, last offset, last stable offset), one per aborted transaction whose ABORT marker is in this segment; fetches at READ_COMMITTED collect them</p>
{{if .TxnIndex}}<table><tr><th>producer id</th><th>first offset</th><th>last offset</th><th>last stable offset</th></tr>
{{range .Aborted}}<tr><td>{{.ProducerID}}</td><td>{{.FirstOffset}}</td><td>{{.LastOffset}}</td><td>{{.LastStableOffset}}</td></tr>
{{else}}<tr><td colspan="4">no aborted transactions</td></tr>{{end}}</table>{{if gt .AbortedTotal (len .Aborted)}}<p>first {{len .Aborted}} of {{.AbortedTotal}}</p>{{end}}
{{else}}<p>no .txnindex file: no transaction aborted in this segment</p>{{end}}
{{else}}
<h2>segments</h2>
<p class="src">kafka.log.LogSegment: &lt;base offset&gt;.log, .index (kafka.log.OffsetIndex), .timeindex (kafka.log.TimeIndex), .txnindex (kafka.log.TransactionIndex, only after an abort); open one for its index entries</p>
<table><tr><th>base offset</th><th>next offset</th><th>size (bytes)</th><th>first timestamp</th><th>largest timestamp</th><th>modified</th>
<th>index entries</th><th>time-index entries</th><th>aborted txns</th><th>active</th><th>file</th></tr>
{{range .Segments}}<tr><td><a href="/segments?topic={{$t}}&amp;partition={{$p}}&amp;segment={{.BaseOffset}}">{{.BaseOffset}}</a></td><td>{{.NextOffset}}</td><td>{{.Size}}</td><td>{{ts .FirstTimestamp}}</td><td>{{ts .LargestTimestamp}}</td><td>{{.LastModified}}</td>
<td>{{.IndexEntries}}{{if .Active}} (of {{.IndexSlots}} preallocated){{end}}</td><td>{{.TimeIndexEntries}}</td><td>{{if .TxnIndex}}{{.AbortedTxns}}{{else}}—{{end}}</td><td>{{if .Active}}active{{end}}</td><td><code>{{.File}}</code></td></tr>
{{end}}</table>
{{if lt (len .Segments) .SegmentCount}}<p>the newest {{len .Segments}} of {{.SegmentCount}} segments</p>{{end}}
<h2>leader epochs</h2>
<p class="src">kafka.server.epoch.LeaderEpochFileCache: leader-epoch-checkpoint, the first offset of each epoch</p>
<table><tr><th>epoch</th><th>start offset</th></tr>
{{range .LeaderEpochs}}<tr><td>{{.Epoch}}</td><td>{{.StartOffset}}</td></tr>{{end}}</table>
<h2>producer state snapshots</h2>
<p class="src">kafka.log.ProducerStateManager: &lt;offset&gt;.snapshot, the producers' state as of that offset (written on a roll and at shutdown; loaded at start-up so the log is not replayed from the beginning)</p>
{{range .ProducerSnapshots}}<h3><code>{{.File}}</code>{{if ge .Producers 0}}: {{.Producers}} producers{{end}}</h3>{{if .Error}}<p>{{.Error}}</p>{{end}}
{{template "producers" .Entries}}{{if gt .Producers (len .Entries)}}<p>first {{len .Entries}} of {{.Producers}}</p>{{end}}
{{else}}<p>no snapshot files</p>{{end}}
<h2>producer state now</h2>
<p class="src">kafka.log.ProducerStateManager.activeProducers (in memory; what DescribeProducers answers)</p>
{{template "producers" .Producers}}
{{end}}
{{define "producers"}}<table><tr><th>producer id</th><th>epoch</th><th>last sequence</th><th>last offset</th><th>last timestamp</th><th>coordinator epoch</th><th>txn start</th></tr>
{{range .}}<tr><td>{{.ProducerID}}</td><td>{{.ProducerEpoch}}</td><td>{{.LastSequence}}</td><td>{{.LastOffset}}</td><td>{{ts .LastTimestamp}}</td><td>{{.CoordinatorEpoch}}</td><td>{{if ge .TxnStartOffset 0}}{{.TxnStartOffset}}{{else}}—{{end}}</td></tr>
{{else}}<tr><td colspan="7">none</td></tr>{{end}}</table>{{end}}
`))

// webTimestamp renders epoch milliseconds with the UTC time beside them; -1 is "none".
func webTimestamp(ms int64) string {
	if ms < 0 {
		return "—"
	}
	return strconv.FormatInt(ms, 10) + " (" + time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") + ")"
}

// webSegmentsIndexTmpl lists the partitions this broker holds, for /segments without a
// partition.
var webSegmentsIndexTmpl = template.Must(template.New("segments-index").Parse(`
<p>The partitions whose logs are on this broker; open one for its segments.</p>
<table><tr><th>topic</th><th>partition</th><th>replica</th><th>log start</th><th>log end offset</th><th>size (bytes)</th></tr>
{{range .}}<tr><td>{{.Topic}}</td><td><a href="/segments?topic={{.Topic}}&amp;partition={{.Partition}}">{{.Partition}}</a></td><td>{{if .IsLeader}}leader{{else}}follower{{end}}</td>
<td>{{.LogStartOffset}}</td><td>{{.LogEndOffset}}</td><td>{{.Size}}</td></tr>
{{else}}<tr><td colspan="6">no partition is hosted on this broker</td></tr>{{end}}</table>`))

func (b *Broker) webSegments(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query(); !q.Has("topic") && !q.Has("partition") && !q.Has("segment") && !q.Has("page") {
		hosted := []webPartition{}
		for _, p := range b.partitionsData() {
			if p.Hosted {
				hosted = append(hosted, p)
			}
		}
		webRender(w, r, "partitions on this broker", "kafka.server.ReplicaManager's hosted partitions, kafka.log.UnifiedLog", webSegmentsIndexTmpl, hosted)
		return
	}
	topic, err := queryName(r, "topic")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	part, err := queryInt(r, "partition", 0, math.MaxInt32)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	q := r.URL.Query()
	segBase, page := int64(-1), int64(0)
	if q.Has("segment") {
		if segBase, err = queryInt(r, "segment", 0, math.MaxInt64); err != nil {
			badRequest(w, "%v", err)
			return
		}
	}
	if q.Has("page") {
		if page, err = queryInt(r, "page", 0, math.MaxInt32); err != nil {
			badRequest(w, "%v", err)
			return
		}
		if segBase < 0 {
			badRequest(w, "parameter \"page\" needs \"segment\"")
			return
		}
	}
	if b.metadata == nil || !b.metadata.Contains(topic) {
		notFound(w, "unknown topic %q: not in this broker's metadata cache", topic)
		return
	}
	tp := logstore.TopicPartition{Topic: topic, Partition: int32(part)}
	pm, ok := b.metadata.Partition(tp)
	if !ok {
		notFound(w, "unknown partition %d of topic %q", part, topic)
		return
	}
	var l *logstore.Log
	if b.replicas != nil {
		if p, err := b.replicas.Partition(tp); err == nil && p != nil {
			l = p.Log()
		}
	}
	if l == nil {
		msg := fmt.Sprintf("partition %s-%d is not hosted on broker %d; its replicas are on brokers %v", topic, part, b.brokerID, pm.Replicas)
		for _, id := range pm.Replicas {
			if a := b.webKnownPeerHTTP(id); a != "" {
				msg += fmt.Sprintf("\nbroker %d: http://%s/segments?topic=%s&partition=%d", id, a, url.QueryEscape(topic), part)
			}
		}
		notFound(w, "%s", msg)
		return
	}
	d := webSegmentsData{Topic: topic, Partition: int32(part), Dir: l.Dir(), LogStartOffset: l.LogStartOffset(),
		LogEndOffset: l.LogEndOffset(), HighWatermark: l.HighWatermark(), Size: l.Size(), Segments: []webSegment{},
		ProducerSnapshots: []webSnapshot{}, Producers: []webProducer{},
		LeaderEpochs: append([]logstore.EpochEntry{}, l.EpochEntries()...)}
	segs := l.Segments()
	d.SegmentCount = len(segs)
	if segBase >= 0 {
		var info *logstore.SegmentInfo
		for i := range segs {
			if segs[i].BaseOffset == segBase {
				info = &segs[i]
			}
		}
		if info == nil {
			notFound(w, "%s-%d has no segment with base offset %d on broker %d", topic, part, segBase, b.brokerID)
			return
		}
		detail, status, err := webSegmentPage(l, *info, page)
		if err != nil {
			http.Error(w, err.Error(), status)
			return
		}
		d.Segment = detail
		title := fmt.Sprintf("segment %d of %s-%d", segBase, topic, part)
		webRender(w, r, title, "kafka.log.LogSegment, OffsetIndex, TimeIndex, TransactionIndex (files in the log dir)", webSegmentsTmpl, d)
		return
	}
	for _, s := range segs[max(len(segs)-webMaxSegmentsListed, 0):] {
		ws := webSegmentOf(s)
		if si, ok, err := l.InspectSegment(s.BaseOffset, 0, 0); ok && err == nil {
			webAddInspection(&ws, si)
		}
		d.Segments = append(d.Segments, ws)
	}
	offs := l.ProducerSnapshotOffsets()
	for i, off := range offs {
		sn := webSnapshot{Offset: off, File: filepath.Base(logstore.ProducerSnapshotFileName("", off)), Producers: -1, Entries: []webProducer{}}
		if i >= len(offs)-webMaxSnapshotsRead {
			ps, err := l.ReadProducerSnapshot(off)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				sn.Error = "deleted since it was listed"
			case err != nil:
				sn.Error = err.Error()
			default:
				sn.Producers = len(ps)
				sn.Entries = webProducers(ps[:min(len(ps), webMaxSnapshotShown)])
			}
		}
		d.ProducerSnapshots = append(d.ProducerSnapshots, sn)
	}
	d.Producers = webProducers(l.ProducerStates())
	title := "segments of " + topic + "-" + strconv.Itoa(int(part))
	webRender(w, r, title, "kafka.log.LogSegment, kafka.log.ProducerStateManager (files in the log dir)", webSegmentsTmpl, d)
}

// webSegmentPage reads page of the segment's indexes; a page past the last is a 404.
func webSegmentPage(l *logstore.Log, info logstore.SegmentInfo, page int64) (*webSegmentDetail, int, error) {
	si, ok, err := l.InspectSegment(info.BaseOffset, page*webIndexPageSize, webIndexPageSize)
	if !ok {
		return nil, http.StatusNotFound, fmt.Errorf("segment %d was deleted", info.BaseOffset)
	}
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("reading segment %d: %v", info.BaseOffset, err)
	}
	d := &webSegmentDetail{webSegment: webSegmentOf(info), Page: page, PageSize: webIndexPageSize, FirstEntry: page * webIndexPageSize,
		Offsets: si.Offsets, Times: si.Times, Aborted: []webAborted{}, AbortedTotal: len(si.AbortedTxns)}
	webAddInspection(&d.webSegment, si)
	d.Pages = max(1, (max(si.OffsetIndexEntries, si.TimeIndexEntries)+webIndexPageSize-1)/webIndexPageSize)
	if page >= d.Pages {
		return nil, http.StatusNotFound, fmt.Errorf("page %d is past the last page %d of segment %d's indexes", page, d.Pages-1, info.BaseOffset)
	}
	dir := filepath.Dir(info.LogFile)
	d.IndexFile = filepath.Base(logstore.IndexFileName(dir, info.BaseOffset))
	d.TimeIndexFile = filepath.Base(logstore.TimeIndexFileName(dir, info.BaseOffset))
	d.TxnIndexFile = filepath.Base(logstore.TxnIndexFileName(dir, info.BaseOffset))
	for _, a := range si.AbortedTxns[:min(len(si.AbortedTxns), webMaxAbortedShown)] {
		d.Aborted = append(d.Aborted, webAborted{a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset})
	}
	return d, http.StatusOK, nil
}

func webSegmentOf(s logstore.SegmentInfo) webSegment {
	return webSegment{BaseOffset: s.BaseOffset, NextOffset: s.NextOffset, Size: s.Size, FirstTimestamp: -1,
		FirstBatchMaxTimestamp: s.FirstBatchTimestamp, LargestTimestamp: s.LargestTimestamp,
		LastModified: s.LastModified.UTC().Format(time.RFC3339), Active: s.Active, File: filepath.Base(s.LogFile)}
}

func webAddInspection(ws *webSegment, si logstore.SegmentInspection) {
	ws.FirstTimestamp, ws.IndexEntries, ws.IndexSlots = si.FirstBatchTimestamp, si.OffsetIndexEntries, si.OffsetIndexSlots
	ws.TimeIndexEntries, ws.TxnIndex, ws.AbortedTxns = si.TimeIndexEntries, si.TxnIndexExists, len(si.AbortedTxns)
	if ws.Size == 0 {
		ws.LargestTimestamp = -1 // LogSegment.largestTimestamp falls back to the file's mtime
	}
}

func webProducers(ps []logstore.ProducerStateInfo) []webProducer {
	out := make([]webProducer, 0, len(ps))
	for _, p := range ps {
		out = append(out, webProducer{ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch, LastSequence: p.LastSequence,
			LastOffset: p.LastOffset, LastTimestamp: p.LastTimestamp, CoordinatorEpoch: p.CoordinatorEpoch, TxnStartOffset: p.CurrentTxnFirstOffset})
	}
	return out
}
