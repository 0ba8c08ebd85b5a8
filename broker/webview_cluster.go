package broker

// webview_cluster.go — the internals view's cluster, partition and segment pages. Each reads
// this broker's own state: the MetadataCache (what the controller last sent in
// UpdateMetadata), the ReplicaManager's hosted partitions, and the logs' segments on disk.

import (
	"html/template"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-kafka/samsa/logstore"
)

// addWebViewCluster mounts the cluster, partition and segment pages.
func (b *Broker) addWebViewCluster(mux *http.ServeMux) {
	mux.HandleFunc("/", readOnly(b.webCluster))
	mux.HandleFunc("/partitions", readOnly(b.webPartitions))
	mux.HandleFunc("/segments", readOnly(b.webSegments))
}

// webBroker is one live broker as kafka.server.MetadataCache knows it (from /brokers/ids/<id>).
type webBroker struct {
	ID        int32    `json:"id"`
	Rack      string   `json:"rack,omitempty"`
	Endpoints []string `json:"endpoints"`
}

type webClusterData struct {
	BrokerID        int32       `json:"broker_id"`
	ControllerID    int32       `json:"controller_id"`
	ControllerEpoch int32       `json:"controller_epoch"`
	ActiveHere      bool        `json:"active_controller_here"`
	Brokers         []webBroker `json:"brokers"`
	ZKState         string      `json:"zk_state"`
	ZKConnected     bool        `json:"zk_connected"`
	ZKSessionID     string      `json:"zk_session_id"`
	ZKTimeoutMs     int64       `json:"zk_session_timeout_ms"`
}

func (b *Broker) clusterData() webClusterData {
	d := webClusterData{BrokerID: b.brokerID, ControllerID: -1, ControllerEpoch: -1}
	if b.metadata != nil {
		d.ControllerID = b.metadata.ControllerID()
		for _, bm := range b.metadata.AliveBrokers() {
			wb := webBroker{ID: bm.ID, Endpoints: []string{}}
			if bm.Rack != nil {
				wb.Rack = *bm.Rack
			}
			for _, ep := range bm.Endpoints {
				wb.Endpoints = append(wb.Endpoints, ep.ListenerName+"://"+ep.Host+":"+strconv.Itoa(int(ep.Port)))
			}
			d.Brokers = append(d.Brokers, wb)
		}
		sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].ID < d.Brokers[j].ID })
	}
	if b.replicas != nil {
		d.ControllerEpoch = b.replicas.ControllerEpoch()
	}
	if b.ctrl != nil {
		d.ActiveHere = b.ctrl.IsActive()
	}
	if b.zk != nil {
		d.ZKState, d.ZKConnected = b.zk.State(), b.zk.Connected()
		d.ZKSessionID = "0x" + strconv.FormatInt(b.zk.SessionID(), 16)
		d.ZKTimeoutMs = b.zk.SessionTimeout().Milliseconds()
	}
	return d
}

var webClusterTmpl = template.Must(template.New("cluster").Parse(`
<p>This broker: <b>{{.BrokerID}}</b>. Controller: <b>{{.ControllerID}}</b>{{if .ActiveHere}} (this broker is the active kafka.controller.KafkaController){{end}},
controller epoch <b>{{.ControllerEpoch}}</b>
<span class="src">(elected through ZooKeeper /controller and /controller_epoch; as this broker last heard in UpdateMetadata / LeaderAndIsr: kafka.server.MetadataCache, ReplicaManager.controllerEpoch)</span></p>
<h2>Live brokers</h2>
<p class="src">kafka.server.MetadataCache, from UpdateMetadata; each registered at /brokers/ids/&lt;id&gt;</p>
<table><tr><th>id</th><th>rack</th><th>endpoints</th></tr>
{{range .Brokers}}<tr><td>{{.ID}}</td><td>{{.Rack}}</td><td>{{range .Endpoints}}{{.}}<br>{{end}}</td></tr>
{{end}}</table>
<h2>ZooKeeper session</h2>
<p class="src">kafka.zookeeper.ZooKeeperClient</p>
<table><tr><th>state</th><td>{{.ZKState}}</td></tr><tr><th>connected</th><td>{{.ZKConnected}}</td></tr>
<tr><th>session id</th><td>{{.ZKSessionID}}</td></tr><tr><th>session timeout (ms)</th><td>{{.ZKTimeoutMs}}</td></tr></table>
<p><a href="/partitions">partitions</a> · <a href="/groups">consumer groups</a> · <a href="/zk">ZooKeeper tree</a> · <a href="/metrics">metrics</a></p>
`))

func (b *Broker) webCluster(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		notFound(w, "no page %q in the internals view", r.URL.Path)
		return
	}
	d := b.clusterData()
	webRender(w, r, "cluster", "ZooKeeper /controller, /brokers/ids/<id>; kafka.server.MetadataCache", webClusterTmpl, d)
}

// webFollower is a follower as the leader's kafka.cluster.Replica tracks it.
type webFollower struct {
	ID           int32 `json:"id"`
	LogEndOffset int64 `json:"log_end_offset"` // -1 until its first fetch
	Lag          int64 `json:"lag"`            // leader LEO − follower LEO; -1 when unknown
}

type webPartition struct {
	Topic       string  `json:"topic"`
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
	Replicas    []int32 `json:"replicas"`
	Offline     []int32 `json:"offline_replicas,omitempty"`
	Hosted      bool    `json:"hosted"`
	IsLeader    bool    `json:"is_leader,omitempty"`
	// This broker's replica, when hosted.
	LogStartOffset int64         `json:"log_start_offset,omitempty"`
	LogEndOffset   int64         `json:"log_end_offset,omitempty"`
	HighWatermark  int64         `json:"high_watermark,omitempty"`
	Followers      []webFollower `json:"followers,omitempty"`
}

func (b *Broker) partitionsData() []webPartition {
	out := []webPartition{}
	if b.metadata == nil {
		return out
	}
	names := b.metadata.TopicNames()
	sort.Strings(names)
	for _, name := range names {
		t, ok := b.metadata.Topic(name)
		if !ok {
			continue
		}
		ids := make([]int, 0, len(t.Partitions))
		for id := range t.Partitions {
			ids = append(ids, int(id))
		}
		sort.Ints(ids)
		for _, id := range ids {
			pm := t.Partitions[int32(id)]
			wp := webPartition{Topic: name, Partition: pm.Partition, Leader: pm.Leader, LeaderEpoch: pm.LeaderEpoch,
				ISR: pm.ISR, Replicas: pm.Replicas, Offline: pm.OfflineReplicas}
			b.addReplicaState(&wp)
			out = append(out, wp)
		}
	}
	return out
}

// addReplicaState fills in this broker's replica of wp from kafka.cluster.Partition, and as
// leader each follower's LEO as its last fetch reported it (Kafka's Replica state).
func (b *Broker) addReplicaState(wp *webPartition) {
	if b.replicas == nil {
		return
	}
	p, err := b.replicas.Partition(logstore.TopicPartition{Topic: wp.Topic, Partition: wp.Partition})
	if err != nil || p == nil {
		return
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	l := p.mu.log
	if l == nil {
		return
	}
	wp.Hosted = true
	wp.IsLeader = p.mu.leaderID == p.localBrokerID
	wp.LogStartOffset, wp.LogEndOffset, wp.HighWatermark = l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark()
	if !wp.IsLeader {
		return
	}
	p.hwMu.Lock() // remotes' fields are written under hwMu with mu held for reading
	defer p.hwMu.Unlock()
	for id, rs := range p.mu.remotes {
		f := webFollower{ID: id, LogEndOffset: rs.logEndOffset, Lag: -1}
		if rs.logEndOffset >= 0 {
			f.Lag = wp.LogEndOffset - rs.logEndOffset
		}
		wp.Followers = append(wp.Followers, f)
	}
	sort.Slice(wp.Followers, func(i, j int) bool { return wp.Followers[i].ID < wp.Followers[j].ID })
}

var webPartitionsTmpl = template.Must(template.New("partitions").Parse(`
<p class="src">leader, epoch, ISR, replicas: kafka.server.MetadataCache (ZooKeeper /brokers/topics/&lt;topic&gt;/partitions/&lt;p&gt;/state);
offsets: kafka.cluster.Partition and kafka.log.UnifiedLog; followers: kafka.cluster.Replica (leader only)</p>
<table><tr><th>topic</th><th>partition</th><th>leader</th><th>leader epoch</th><th>ISR</th><th>replicas</th>
<th>here</th><th>log start</th><th>log end offset</th><th>high watermark</th><th>followers (LEO / lag)</th></tr>
{{range .}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{.Leader}}</td><td>{{.LeaderEpoch}}</td><td>{{.ISR}}</td><td>{{.Replicas}}{{if .Offline}} offline {{.Offline}}{{end}}</td>
{{if .Hosted}}<td><a href="/segments?topic={{.Topic}}&amp;partition={{.Partition}}">{{if .IsLeader}}leader{{else}}follower{{end}}</a></td>
<td>{{.LogStartOffset}}</td><td>{{.LogEndOffset}}</td><td>{{.HighWatermark}}</td>
<td>{{range .Followers}}{{.ID}}: {{if lt .LogEndOffset 0}}not fetched yet{{else}}{{.LogEndOffset}} / {{.Lag}}{{end}}<br>{{end}}</td>
{{else}}<td>—</td><td></td><td></td><td></td><td></td>{{end}}</tr>
{{end}}</table>
`))

func (b *Broker) webPartitions(w http.ResponseWriter, r *http.Request) {
	d := b.partitionsData()
	webRender(w, r, "partitions", "kafka.server.MetadataCache, kafka.cluster.Partition, kafka.cluster.Replica", webPartitionsTmpl, d)
}

// webSegment is one kafka.log.LogSegment: its .log file and the index files beside it.
type webSegment struct {
	BaseOffset       int64  `json:"base_offset"`
	NextOffset       int64  `json:"next_offset"`
	Size             int64  `json:"size"`
	FirstTimestamp   int64  `json:"first_batch_max_timestamp"` // -1 when empty
	LargestTimestamp int64  `json:"largest_timestamp"`
	LastModified     string `json:"last_modified"`
	Active           bool   `json:"active"`
	File             string `json:"file"`
	IndexSize        int64  `json:"index_size"`     // .index bytes (8 per entry)
	TimeIndexSize    int64  `json:"timeindex_size"` // .timeindex bytes (12 per entry)
	TxnIndex         bool   `json:"txnindex"`
}

type webSegmentsData struct {
	Topic             string       `json:"topic"`
	Partition         int32        `json:"partition"`
	Dir               string       `json:"dir"`
	LogStartOffset    int64        `json:"log_start_offset"`
	LogEndOffset      int64        `json:"log_end_offset"`
	HighWatermark     int64        `json:"high_watermark"`
	Segments          []webSegment `json:"segments"`
	ProducerSnapshots []string     `json:"producer_snapshots"`
	// LeaderEpochs is leader-epoch-checkpoint (kafka.server.epoch.LeaderEpochFileCache).
	LeaderEpochs []logstore.EpochEntry `json:"leader_epochs"`
}

// entries counts a closed segment's index entries from its file size; the active segment's
// indexes are preallocated (Kafka's AbstractIndex), so their size says nothing.
var webSegmentsTmpl = template.Must(template.New("segments").Funcs(template.FuncMap{
	"entries": func(size, per int64) int64 {
		if size < 0 {
			return 0
		}
		return size / per
	},
}).Parse(`
<p>{{.Topic}}-{{.Partition}} in <code>{{.Dir}}</code>: log start {{.LogStartOffset}}, log end offset {{.LogEndOffset}}, high watermark {{.HighWatermark}}</p>
<p class="src">kafka.log.LogSegment: &lt;base offset&gt;.log, .index (offset → position, 8 bytes an entry), .timeindex (12 bytes an entry), .txnindex (aborted transactions)</p>
<table><tr><th>base offset</th><th>next offset</th><th>size (bytes)</th><th>first batch max ts</th><th>largest ts</th><th>modified</th>
<th>index entries</th><th>time-index entries</th><th>.txnindex</th><th>active</th><th>file</th></tr>
{{range .Segments}}<tr><td>{{.BaseOffset}}</td><td>{{.NextOffset}}</td><td>{{.Size}}</td><td>{{.FirstTimestamp}}</td><td>{{.LargestTimestamp}}</td><td>{{.LastModified}}</td>
{{if .Active}}<td colspan="2">preallocated (active)</td>{{else}}<td>{{entries .IndexSize 8}}</td><td>{{entries .TimeIndexSize 12}}</td>{{end}}<td>{{if .TxnIndex}}yes{{else}}—{{end}}</td><td>{{if .Active}}active{{end}}</td><td><code>{{.File}}</code></td></tr>
{{end}}</table>
<h2>Leader epochs</h2>
<p class="src">kafka.server.epoch.LeaderEpochFileCache: leader-epoch-checkpoint, the first offset of each epoch</p>
<table><tr><th>epoch</th><th>start offset</th></tr>
{{range .LeaderEpochs}}<tr><td>{{.Epoch}}</td><td>{{.StartOffset}}</td></tr>{{end}}</table>
<h2>Producer state snapshots</h2>
<p class="src">kafka.log.ProducerStateManager: &lt;offset&gt;.snapshot</p>
<ul>{{range .ProducerSnapshots}}<li><code>{{.}}</code></li>{{else}}<li>none</li>{{end}}</ul>
`))

func (b *Broker) webSegments(w http.ResponseWriter, r *http.Request) {
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
	if b.metadata == nil || !b.metadata.Contains(topic) {
		notFound(w, "unknown topic %q: not in this broker's metadata cache", topic)
		return
	}
	tp := logstore.TopicPartition{Topic: topic, Partition: int32(part)}
	if _, ok := b.metadata.Partition(tp); !ok {
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
		notFound(w, "partition %s-%d is not hosted on broker %d; see /partitions for its replicas", topic, part, b.brokerID)
		return
	}
	d := webSegmentsData{Topic: topic, Partition: int32(part), Dir: l.Dir(), LogStartOffset: l.LogStartOffset(),
		LogEndOffset: l.LogEndOffset(), HighWatermark: l.HighWatermark(), Segments: []webSegment{}, ProducerSnapshots: []string{},
		LeaderEpochs: append([]logstore.EpochEntry{}, l.EpochEntries()...)}
	for _, s := range l.Segments() {
		stem := strings.TrimSuffix(s.LogFile, logstore.LogFileSuffix)
		ws := webSegment{BaseOffset: s.BaseOffset, NextOffset: s.NextOffset, Size: s.Size, FirstTimestamp: s.FirstBatchTimestamp,
			LargestTimestamp: s.LargestTimestamp, LastModified: s.LastModified.UTC().Format(time.RFC3339), Active: s.Active,
			File: filepath.Base(s.LogFile), IndexSize: fileSize(stem + logstore.IndexFileSuffix), TimeIndexSize: fileSize(stem + logstore.TimeIndexFileSuffix)}
		ws.TxnIndex = fileSize(stem+logstore.TxnIndexFileSuffix) >= 0
		d.Segments = append(d.Segments, ws)
	}
	if ents, err := os.ReadDir(l.Dir()); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), logstore.SnapshotFileSuffix) {
				d.ProducerSnapshots = append(d.ProducerSnapshots, e.Name())
			}
		}
	}
	webRender(w, r, "segments of "+topic+"-"+strconv.Itoa(int(part)), "kafka.log.LogSegment, kafka.log.ProducerStateManager (files in the log dir)", webSegmentsTmpl, d)
}

// fileSize is a file's size, -1 when it does not exist (or cannot be read).
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}
