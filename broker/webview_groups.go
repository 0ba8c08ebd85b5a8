package broker

// webview_groups.go — the internals view's group, follow-a-record and ZooKeeper pages.
// Groups come from this broker's GroupCoordinator cache (kafka.coordinator.group
// GroupMetadata, GroupMetadataManager, loaded from __consumer_offsets) and, for the list and
// "follow a record", from the other coordinators' (webview_groups_remote.go); "follow a record"
// repeats LogSegment.translateOffset step by step from the files on disk; /zk reads znodes
// through KafkaZkClient's session. Everything is read-only.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// addWebViewGroups mounts the group, follow-a-record and ZooKeeper pages.
func (b *Broker) addWebViewGroups(mux *http.ServeMux) {
	mux.HandleFunc("/groups", readOnly(b.webGroups))
	mux.HandleFunc("/group", readOnly(b.webGroup))
	mux.HandleFunc("/follow", readOnly(b.webFollow))
	mux.HandleFunc("/zk", readOnly(b.webZK))
}

// webGroupCoordinator is the coordinator if one was started; the view must not start one
// (that would load __consumer_offsets partitions as a side effect).
func (b *Broker) webGroupCoordinator() *group.Coordinator {
	if b.apis == nil {
		return nil
	}
	b.apis.services.mu.Lock()
	defer b.apis.services.mu.Unlock()
	return b.apis.services.groups
}

// ---- /groups ----

const groupsSource = "kafka.coordinator.group.GroupMetadataManager on every broker (each caches the groups of the __consumer_offsets partitions it leads)"

type webGroupRow struct {
	GroupID      string `json:"group_id"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
	Page         string `json:"page,omitempty"` // the group's page on its coordinator, when not this broker
}

var groupsTmpl = template.Must(template.New("groups").Parse(`
{{if .Note}}<p>{{.Note}}</p>{{end}}
<table><tr><th>group</th><th>state</th><th>protocol type</th><th>coordinator</th></tr>
{{range .Groups}}<tr><td><a href="{{if .Page}}{{.Page}}{{else}}/group?id={{.GroupID}}{{end}}">{{.GroupID}}</a></td><td>{{.State}}</td><td>{{.ProtocolType}}</td><td>broker {{.Coordinator}}</td></tr>
{{else}}<tr><td colspan="4">no groups</td></tr>{{end}}
</table>
{{range .PeerNotes}}<p>{{.}}</p>{{end}}`))

func (b *Broker) webGroups(w http.ResponseWriter, r *http.Request) {
	data := struct {
		Groups    []webGroupRow  `json:"groups"`
		Note      string         `json:"note,omitempty"`
		PeerNotes []string       `json:"peer_notes,omitempty"`
		Committed []webCommitted `json:"committed,omitempty"` // for peers (scope=local) only
	}{Groups: []webGroupRow{}}
	if c := b.webGroupCoordinator(); c == nil {
		data.Note = "the group coordinator has not started on this broker (no group request or __consumer_offsets leadership yet)"
	} else if gs, kerr := c.ListGroups(nil); kerr != nil {
		data.Note = "ListGroups: " + kerr.Message
	} else {
		for _, g := range gs {
			data.Groups = append(data.Groups, webGroupRow{GroupID: g.GroupID, State: g.State, ProtocolType: g.ProtocolType, Coordinator: b.brokerID})
		}
	}
	if webLocalOnly(r) { // a peer asks: this coordinator's groups and offsets only (webview_groups_remote.go)
		data.Committed = b.webLocalCommitted()
	} else {
		data.Groups, data.PeerNotes = b.addPeerGroups(data.Groups)
	}
	sort.Slice(data.Groups, func(i, j int) bool { return data.Groups[i].GroupID < data.Groups[j].GroupID })
	webRender(w, r, "consumer groups", groupsSource, groupsTmpl, data)
}

// ---- /group?id= ----

type webMember struct {
	MemberID   string             `json:"member_id"`
	InstanceID string             `json:"group_instance_id,omitempty"`
	ClientID   string             `json:"client_id"`
	ClientHost string             `json:"client_host"`
	Assignment map[string][]int32 `json:"assignment"`
}

type webOffset struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Committed    int64  `json:"committed_offset"`
	LeaderEpoch  int32  `json:"leader_epoch"`
	Metadata     string `json:"metadata"`
	LogEndOffset int64  `json:"log_end_offset"` // -1: unknown here
	Lag          int64  `json:"lag"`            // -1: unknown here
	LagSource    string `json:"lag_source"`
}

type webGroupDetail struct {
	GroupID      string `json:"group_id"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Protocol     string `json:"protocol"`
	Partition    int32  `json:"offsets_partition"` // __consumer_offsets partition
	// Generation and Leader from the coordinator's cache (GroupMetadata.generationId,
	// leaderId); -1 and "" when the group is not cached.
	Generation int32       `json:"generation"`
	Leader     string      `json:"leader"`
	Members    []webMember `json:"members"`
	Offsets    []webOffset `json:"offsets"`
}

var groupTmpl = template.Must(template.New("group").Parse(`
<p>state <b>{{.State}}</b> · protocol type {{.ProtocolType}} · protocol {{.Protocol}} · stored in __consumer_offsets-{{.Partition}}</p>
<p>generation {{.Generation}} · leader {{.Leader}} <span class="src">(GroupMetadata.generationId, leaderId)</span></p>
<h2>members <span class="src">(GroupMetadata.allMemberMetadata / MemberMetadata)</span></h2>
<table><tr><th>member id</th><th>instance id</th><th>client id</th><th>host</th><th>assignment</th></tr>
{{range .Members}}<tr><td>{{.MemberID}}</td><td>{{.InstanceID}}</td><td>{{.ClientID}}</td><td>{{.ClientHost}}</td><td>{{range $t, $ps := .Assignment}}{{$t}} {{$ps}} {{end}}</td></tr>
{{else}}<tr><td colspan="5">no members</td></tr>{{end}}</table>
<h2>committed offsets <span class="src">(GroupMetadata.offsets; lag = log end offset − committed)</span></h2>
<table><tr><th>topic</th><th>partition</th><th>committed</th><th>leader epoch</th><th>log end offset</th><th>lag</th><th>lag from</th></tr>
{{$g := .GroupID}}{{range .Offsets}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td><a href="/follow?topic={{.Topic}}&partition={{.Partition}}&offset={{.Committed}}">{{.Committed}}</a></td><td>{{.LeaderEpoch}}</td><td>{{.LogEndOffset}}</td><td>{{.Lag}}</td><td>{{.LagSource}}</td></tr>
{{else}}<tr><td colspan="7">no committed offsets</td></tr>{{end}}</table>`))

func (b *Broker) webGroup(w http.ResponseWriter, r *http.Request) {
	id, err := queryName(r, "id")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	c := b.webGroupCoordinator()
	if c == nil {
		notFound(w, "group %q is not known: the group coordinator has not started on this broker", id)
		return
	}
	s, kerr := c.DescribeGroup(id)
	if kerr != nil {
		notFound(w, "group %q: %s (this broker is not its coordinator, or its partition is loading)", id, kerr.Message)
		return
	}
	offs, _ := c.FetchOffsets(id, nil, false)
	if s.State == group.Dead.String() && len(offs) == 0 {
		notFound(w, "group %q is not known to this broker's coordinator", id)
		return
	}
	d := webGroupDetail{GroupID: id, State: s.State, ProtocolType: s.ProtocolType, Protocol: s.Protocol,
		Partition: c.PartitionFor(id), Members: []webMember{}, Offsets: []webOffset{}, Generation: -1}
	if gen, leader, ok := c.GenerationAndLeader(id); ok {
		d.Generation, d.Leader = gen, leader
	}
	for _, m := range s.Members {
		wm := webMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assignment: map[string][]int32{}}
		if m.GroupInstanceID != nil {
			wm.InstanceID = *m.GroupInstanceID
		}
		// The assignment is opaque to the coordinator; "consumer" groups use ConsumerProtocol.
		if s.ProtocolType == "consumer" && len(m.Assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if a.ReadFrom(m.Assignment) == nil {
				for _, t := range a.Topics {
					wm.Assignment[t.Topic] = t.Partitions
				}
			}
		}
		d.Members = append(d.Members, wm)
	}
	for _, o := range offs {
		if o.Offset < 0 {
			continue
		}
		wo := webOffset{Topic: o.TP.Topic, Partition: o.TP.Partition, Committed: o.Offset, LeaderEpoch: o.LeaderEpoch,
			Metadata: o.Metadata, LogEndOffset: -1, Lag: -1}
		wo.LogEndOffset, wo.LagSource = b.webLogEnd(logstore.TopicPartition{Topic: o.TP.Topic, Partition: o.TP.Partition})
		if wo.LogEndOffset >= 0 {
			wo.Lag = max(wo.LogEndOffset-o.Offset, 0)
		}
		d.Offsets = append(d.Offsets, wo)
	}
	sort.Slice(d.Offsets, func(i, j int) bool {
		a, c := d.Offsets[i], d.Offsets[j]
		return a.Topic < c.Topic || a.Topic == c.Topic && a.Partition < c.Partition
	})
	webRender(w, r, "group "+id, "kafka.coordinator.group.GroupMetadata (DescribeGroups, OffsetFetch)", groupTmpl, d)
}

// webLogEnd is a partition's log end offset from the local replica, and where it came from.
// The metadata cache (UpdateMetadata) carries no offsets, so for a partition not hosted here
// it is the leader's, from the leader's own page; only when that is unavailable is the lag
// unknown on this broker's page.
func (b *Broker) webLogEnd(tp logstore.TopicPartition) (int64, string) {
	if b.replicas != nil {
		if p, err := b.replicas.Partition(tp); err == nil {
			if l := p.Log(); l != nil {
				role := "follower"
				if p.IsLeader() {
					role = "leader"
				}
				return l.LogEndOffset(), "local replica (" + role + ")"
			}
		}
	}
	if b.metadata != nil {
		if pm, ok := b.metadata.Partition(tp); ok {
			if leo, src, ok := b.webPeerLogEnd(tp, pm.Leader); ok { // webview_remote.go
				return leo, src
			}
			return -1, fmt.Sprintf("metadata only: not hosted here, leader is broker %d", pm.Leader)
		}
	}
	return -1, "unknown partition"
}

// ---- /follow?topic=&partition=&offset= ----

const followSource = "kafka.log.LogSegment.translateOffset → kafka.log.OffsetIndex.lookup → kafka.log.FileRecords.searchForOffsetWithSize"

type webBatchHeader struct {
	Position      int64  `json:"position"`
	BaseOffset    int64  `json:"base_offset"`
	LastOffset    int64  `json:"last_offset"`
	RecordCount   int32  `json:"record_count"`
	Magic         int8   `json:"magic"`
	LeaderEpoch   int32  `json:"partition_leader_epoch"`
	ProducerID    int64  `json:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch"`
	BaseSequence  int32  `json:"base_sequence"`
	BaseTimestamp int64  `json:"base_timestamp"`
	MaxTimestamp  int64  `json:"max_timestamp"`
	LogAppendTime bool   `json:"log_append_time"`
	Compression   string `json:"compression"`
	Transactional bool   `json:"transactional"`
	Control       bool   `json:"control"`
	SizeInBytes   int64  `json:"size_in_bytes"`
}

type webFollow struct {
	Topic          string          `json:"topic"`
	Partition      int32           `json:"partition"`
	Offset         int64           `json:"offset"`
	SegmentBase    int64           `json:"segment_base_offset"`
	SegmentFile    string          `json:"segment_file"`
	IndexFile      string          `json:"index_file"`
	IndexEntries   int             `json:"index_entries"`
	IndexFound     bool            `json:"index_entry_found"`
	IndexRelOffset int64           `json:"index_relative_offset"`
	IndexPosition  int64           `json:"index_position"`
	IndexAbsOffset int64           `json:"index_absolute_offset"`
	Scan           []webScanStep   `json:"scan"`
	Batch          *webBatchHeader `json:"batch"`
	Leader         int32           `json:"leader"`
	LeaderEpoch    int32           `json:"leader_epoch"`
	Replicas       []int32         `json:"replicas"`
	ISR            []int32         `json:"isr"`
	LogStartOffset int64           `json:"log_start_offset"`
	HighWatermark  int64           `json:"high_watermark"`
	LogEndOffset   int64           `json:"log_end_offset"`
	BelowHW        bool            `json:"below_high_watermark"`
	GroupsPast     []webGroupPast  `json:"groups_committed_past"`
	GroupsNotes    []string        `json:"groups_notes,omitempty"` // coordinators that did not answer
}

type webScanStep struct {
	Position   int64 `json:"position"`
	BaseOffset int64 `json:"base_offset"`
	LastOffset int64 `json:"last_offset"`
	Size       int64 `json:"size"`
}

type webGroupPast struct {
	GroupID     string `json:"group_id"`
	Committed   int64  `json:"committed_offset"`
	Coordinator int32  `json:"coordinator"`
	Page        string `json:"page,omitempty"` // the group's page on its coordinator, when not this broker
}

var followTmpl = template.Must(template.New("follow").Parse(`
<ol>
<li><b>segment</b> (Log.segments.floorEntry): the segment whose base offset ≤ {{.Offset}} is <code>{{.SegmentFile}}</code> (base offset {{.SegmentBase}})</li>
<li><b>sparse index</b> (OffsetIndex.lookup, binary search over {{.IndexEntries}} entries of <code>{{.IndexFile}}</code>):
 {{if .IndexFound}}entry relative offset {{.IndexRelOffset}} (absolute {{.IndexAbsOffset}}) → file position {{.IndexPosition}}{{else}}no entry ≤ target: scan from position 0{{end}}</li>
<li><b>scan</b> (FileRecords.searchForOffsetWithSize: batch headers from that position until last offset ≥ {{.Offset}}):
<table><tr><th>position</th><th>base offset</th><th>last offset</th><th>size</th></tr>
{{range .Scan}}<tr><td>{{.Position}}</td><td>{{.BaseOffset}}</td><td>{{.LastOffset}}</td><td>{{.Size}}</td></tr>{{end}}</table></li>
</ol>
{{with .Batch}}<h2>batch header <span class="src">(RecordBatch, DefaultRecordBatch)</span></h2>
<table>
<tr><th>position</th><td>{{.Position}}</td></tr><tr><th>base offset</th><td>{{.BaseOffset}}</td></tr>
<tr><th>last offset</th><td>{{.LastOffset}}</td></tr><tr><th>records</th><td>{{.RecordCount}}</td></tr>
<tr><th>magic</th><td>{{.Magic}}</td></tr><tr><th>partition leader epoch</th><td>{{.LeaderEpoch}}</td></tr>
<tr><th>producer id / epoch</th><td>{{.ProducerID}} / {{.ProducerEpoch}}</td></tr><tr><th>base sequence</th><td>{{.BaseSequence}}</td></tr>
<tr><th>base / max timestamp</th><td>{{.BaseTimestamp}} / {{.MaxTimestamp}}{{if .LogAppendTime}} (LogAppendTime){{end}}</td></tr>
<tr><th>compression</th><td>{{.Compression}}</td></tr>
<tr><th>transactional / control</th><td>{{.Transactional}} / {{.Control}}</td></tr>
<tr><th>size</th><td>{{.SizeInBytes}}</td></tr></table>{{end}}
<h2>replicas <span class="src">(Partition, /brokers/topics/{{.Topic}}/partitions/{{.Partition}}/state)</span></h2>
<p>leader {{.Leader}} (epoch {{.LeaderEpoch}}) · replicas {{.Replicas}} · ISR {{.ISR}}</p>
<p>log start {{.LogStartOffset}} · high watermark {{.HighWatermark}} · log end {{.LogEndOffset}} ·
 offset {{.Offset}} is {{if .BelowHW}}<b>below the high watermark</b> (committed: consumers can read it){{else}}<b>not below the high watermark</b> (not yet replicated to the whole ISR){{end}}</p>
<h2>groups committed past it <span class="src">(GroupMetadata.offsets)</span></h2>
<ul>{{range .GroupsPast}}<li><a href="{{if .Page}}{{.Page}}{{else}}/group?id={{.GroupID}}{{end}}">{{.GroupID}}</a> at {{.Committed}} (coordinator: broker {{.Coordinator}})</li>{{else}}<li>no group has committed past it</li>{{end}}</ul>
{{range .GroupsNotes}}<p>{{.}}</p>{{end}}`))

func (b *Broker) webFollow(w http.ResponseWriter, r *http.Request) {
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
	off, err := queryInt(r, "offset", 0, math.MaxInt64-1)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	tp := logstore.TopicPartition{Topic: topic, Partition: int32(part)}
	if b.replicas == nil {
		notFound(w, "the broker is not started")
		return
	}
	p, perr := b.replicas.Partition(tp)
	var l *logstore.Log
	if perr == nil {
		l = p.Log()
	}
	if l == nil {
		if b.metadata == nil || !b.metadata.Contains(topic) {
			notFound(w, "unknown topic %q", topic)
			return
		}
		pm, ok := b.metadata.Partition(tp)
		if !ok {
			notFound(w, "topic %q has no partition %d", topic, part)
			return
		}
		notFound(w, "%s-%d has no replica on this broker; its replicas are %v (leader %d)", topic, part, pm.Replicas, pm.Leader)
		return
	}
	f := webFollow{Topic: topic, Partition: int32(part), Offset: off, LogStartOffset: l.LogStartOffset(),
		HighWatermark: l.HighWatermark(), LogEndOffset: l.LogEndOffset(), Scan: []webScanStep{}, GroupsPast: []webGroupPast{}}
	if off >= f.LogEndOffset {
		notFound(w, "offset %d is beyond the log end offset %d", off, f.LogEndOffset)
		return
	}
	if off < f.LogStartOffset {
		notFound(w, "offset %d is below the log start offset %d (deleted by retention or DeleteRecords)", off, f.LogStartOffset)
		return
	}
	st := p.State()
	f.Leader, f.LeaderEpoch, f.Replicas, f.ISR = st.LeaderID, st.LeaderEpoch, st.Replicas, st.ISR
	f.BelowHW = off < f.HighWatermark
	var seg *logstore.SegmentInfo
	segs := l.Segments()
	for i := range segs {
		if segs[i].BaseOffset <= off {
			seg = &segs[i]
		}
	}
	if seg == nil {
		notFound(w, "no segment holds offset %d", off)
		return
	}
	f.SegmentBase, f.SegmentFile = seg.BaseOffset, seg.LogFile
	f.IndexFile = strings.TrimSuffix(seg.LogFile, ".log") + ".index"
	if err := webTranslateOffset(&f, seg.Size); err != nil {
		http.Error(w, "reading the segment: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if c := b.webGroupCoordinator(); c != nil {
		gs, _ := c.ListGroups(nil)
		for _, g := range gs {
			offs, _ := c.FetchOffsets(g.GroupID, []group.TopicPartition{{Topic: topic, Partition: int32(part)}}, false)
			// A committed offset is the next record to consume, so > O means O was consumed.
			if len(offs) == 1 && offs[0].Offset > off {
				f.GroupsPast = append(f.GroupsPast, webGroupPast{GroupID: g.GroupID, Committed: offs[0].Offset, Coordinator: b.brokerID})
			}
		}
	}
	b.addPeerGroupsPast(&f) // the groups other brokers coordinate (webview_groups_remote.go)
	sort.Slice(f.GroupsPast, func(i, j int) bool { return f.GroupsPast[i].GroupID < f.GroupsPast[j].GroupID })
	webRender(w, r, fmt.Sprintf("follow %s-%d offset %d", topic, part, off), followSource, followTmpl, f)
}

// webTranslateOffset repeats LogSegment.translateOffset from the files: OffsetIndex.lookup
// in the .index (8-byte entries: relative offset, position; preallocated space is zeros, so
// entries end where relative offsets stop increasing), then FileRecords.searchForOffsetWithSize
// over 61-byte batch headers from that position.
func webTranslateOffset(f *webFollow, segSize int64) error {
	var rels, poss []int64
	if xf, err := os.Open(f.IndexFile); err == nil {
		// Streamed: an active segment's index is preallocated (segment.index.bytes, 10 MB).
		br := bufio.NewReader(xf)
		var e [8]byte
		for i := 0; ; i++ {
			if _, err := io.ReadFull(br, e[:]); err != nil {
				break
			}
			rel, pos := int64(binary.BigEndian.Uint32(e[:])), int64(binary.BigEndian.Uint32(e[4:]))
			if i > 0 && rel <= rels[len(rels)-1] {
				break // preallocated zeros (or an empty index whose first slot is zero)
			}
			rels, poss = append(rels, rel), append(poss, pos)
		}
		xf.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(rels) == 1 && rels[0] == 0 && poss[0] == 0 {
		rels, poss = nil, nil // only zeros: no entry (an entry (0, 0) would find position 0 anyway)
	}
	f.IndexEntries = len(rels)
	target := f.Offset - f.SegmentBase
	k := sort.Search(len(rels), func(i int) bool { return rels[i] > target }) - 1
	start := int64(0)
	if k >= 0 {
		f.IndexFound, f.IndexRelOffset, f.IndexPosition = true, rels[k], poss[k]
		f.IndexAbsOffset = f.SegmentBase + rels[k]
		start = poss[k]
	}
	lf, err := os.Open(f.SegmentFile)
	if err != nil {
		return err
	}
	defer lf.Close()
	var hdr [recordbatch.HeaderSize]byte
	for pos := start; pos+recordbatch.HeaderSize <= segSize; {
		if _, err := lf.ReadAt(hdr[:], pos); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		bt := recordbatch.Batch(hdr[:])
		size := 12 + int64(bt.BatchLength()) // offset (8) and length (4) precede the rest
		if size < recordbatch.HeaderSize {
			return fmt.Errorf("corrupt batch header at position %d", pos)
		}
		if len(f.Scan) < 100 { // a long scan is shown by its first steps
			f.Scan = append(f.Scan, webScanStep{pos, bt.BaseOffset(), bt.LastOffset(), size})
		}
		if bt.LastOffset() >= f.Offset {
			f.Batch = &webBatchHeader{Position: pos, BaseOffset: bt.BaseOffset(), LastOffset: bt.LastOffset(),
				RecordCount: bt.RecordCount(), Magic: bt.Magic(), LeaderEpoch: bt.PartitionLeaderEpoch(),
				ProducerID: bt.ProducerID(), ProducerEpoch: bt.ProducerEpoch(), BaseSequence: bt.BaseSequence(),
				BaseTimestamp: bt.BaseTimestamp(), MaxTimestamp: bt.MaxTimestamp(), LogAppendTime: bt.LogAppendTime(),
				Compression: bt.Codec().String(), Transactional: bt.Transactional(), Control: bt.Control(), SizeInBytes: size}
			return nil
		}
		pos += size
	}
	return nil
}

// ---- /zk?path= ----

const zkSource = "ZooKeeper, as kafka.zk.KafkaZkClient lays it out (ZkData: /brokers/ids, /brokers/topics, /controller, /controller_epoch, /admin, /config, /isr_change_notification, …)"

type webZNode struct {
	Path     string      `json:"path"`
	Parent   string      `json:"parent,omitempty"`
	Children []string    `json:"children"`
	Data     string      `json:"data"`
	DataKind string      `json:"data_kind"` // json, text, binary, empty
	Stat     zkmeta.Stat `json:"stat"`
}

var zkTmpl = template.Must(template.New("zk").Parse(`
<p><code>{{.Path}}</code>{{if .Parent}} · <a href="/zk?path={{.Parent}}">up</a>{{end}}</p>
<h2>children</h2><ul>{{$p := .Path}}{{range .Children}}<li><a href="/zk?path={{if eq $p "/"}}/{{.}}{{else}}{{$p}}/{{.}}{{end}}">{{.}}</a></li>{{else}}<li>none</li>{{end}}</ul>
<h2>data ({{.DataKind}})</h2><pre>{{.Data}}</pre>
<h2>stat</h2><table>
<tr><th>czxid / mzxid</th><td>{{.Stat.Czxid}} / {{.Stat.Mzxid}}</td></tr>
<tr><th>ctime / mtime (ms)</th><td>{{.Stat.Ctime}} / {{.Stat.Mtime}}</td></tr>
<tr><th>version / cversion</th><td>{{.Stat.Version}} / {{.Stat.Cversion}}</td></tr>
<tr><th>ephemeral owner</th><td>{{.Stat.EphemeralOwner}}</td></tr>
<tr><th>data length / children</th><td>{{.Stat.DataLength}} / {{.Stat.NumChildren}}</td></tr></table>`))

// webZKPath checks a znode path: absolute, no empty, "." or ".." segments, no control
// characters, bounded length.
func webZKPath(p string) error {
	switch {
	case p == "/":
		return nil
	case len(p) > 1024:
		return errors.New("path longer than 1024 characters")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q must start with /", p)
	}
	for _, s := range strings.Split(p[1:], "/") {
		if s == "" || s == "." || s == ".." {
			return fmt.Errorf("path %q has an empty, \".\" or \"..\" segment", p)
		}
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("path %q contains a control character", p)
		}
	}
	return nil
}

func (b *Broker) webZK(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/"
	}
	if err := webZKPath(p); err != nil {
		badRequest(w, "%v", err)
		return
	}
	if b.zk == nil {
		notFound(w, "no ZooKeeper session")
		return
	}
	data, stat, err := b.zk.Get(p)
	if errors.Is(err, zkmeta.ErrNoNode) {
		notFound(w, "znode %s does not exist", p)
		return
	}
	if err != nil {
		http.Error(w, "ZooKeeper: "+err.Error(), http.StatusBadGateway)
		return
	}
	kids, err := b.zk.Children(p)
	if err != nil && !errors.Is(err, zkmeta.ErrNoNode) {
		http.Error(w, "ZooKeeper: "+err.Error(), http.StatusBadGateway)
		return
	}
	sort.Strings(kids)
	n := webZNode{Path: p, Children: append([]string{}, kids...), Stat: stat}
	if p != "/" {
		n.Parent = p[:max(strings.LastIndex(p, "/"), 1)]
	}
	var pretty json.RawMessage
	switch {
	case len(data) == 0:
		n.DataKind = "empty"
	case json.Unmarshal(data, &pretty) == nil:
		out, _ := json.MarshalIndent(pretty, "", "  ")
		n.Data, n.DataKind = string(out), "json"
	case utf8.Valid(data):
		n.Data, n.DataKind = string(data), "text"
	default:
		n.Data, n.DataKind = fmt.Sprintf("% x", data[:min(len(data), 256)]), "binary"
	}
	webRender(w, r, "znode "+p, zkSource, zkTmpl, n)
}
