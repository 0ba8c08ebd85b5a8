package broker

// webview_cluster.go — the internals view's cluster and partition pages. Each starts from
// this broker's own state: the MetadataCache (what the controller last sent in
// UpdateMetadata) and the ReplicaManager's hosted partitions; what only the other brokers
// know (their replicas' offsets, their ZooKeeper sessions, the controller they see) is
// gathered from their pages (webview_remote.go) unless ?scope=local asks for this broker's
// view alone. The segments page is in webview_segments.go.

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/samsa-kafka/samsa/logstore"
)

// addWebViewCluster mounts the cluster, partition and segment pages.
func (b *Broker) addWebViewCluster(mux *http.ServeMux) {
	mux.HandleFunc("/", readOnly(b.webCluster))
	mux.HandleFunc("/partitions", readOnly(b.webPartitions))
	mux.HandleFunc("/segments", readOnly(b.webSegments)) // webview_segments.go
}

// webBroker is one live broker as kafka.server.MetadataCache knows it (from /brokers/ids/<id>).
type webBroker struct {
	ID        int32    `json:"id"`
	Rack      string   `json:"rack,omitempty"`
	Endpoints []string `json:"endpoints"`
}

type webClusterData struct {
	BrokerID        int32       `json:"broker_id"`
	HTTP            string      `json:"http"` // this broker's samsa.http.listener, as bound
	ControllerID    int32       `json:"controller_id"`
	ControllerEpoch int32       `json:"controller_epoch"`
	ActiveHere      bool        `json:"active_controller_here"`
	Brokers         []webBroker `json:"brokers"`
	ZKState         string      `json:"zk_state"`
	ZKConnected     bool        `json:"zk_connected"`
	ZKSessionID     string      `json:"zk_session_id"`
	ZKTimeoutMs     int64       `json:"zk_session_timeout_ms"`
	// Views is every live broker's own answer (this one's included), gathered from their
	// pages; absent with ?scope=local.
	Views []webBrokerView `json:"views,omitempty"`
	// ControllerPage is the controller's /controller page, when its listener is known.
	ControllerPage string `json:"controller_page,omitempty"`
}

// webBrokerView is one broker's view of the cluster as it reports it itself.
type webBrokerView struct {
	ID              int32  `json:"id"`
	Self            bool   `json:"self"`
	HTTP            string `json:"http,omitempty"`
	Answered        bool   `json:"answered"`
	Error           string `json:"error,omitempty"`
	ControllerID    int32  `json:"controller_id"`
	ControllerEpoch int32  `json:"controller_epoch"`
	ActiveHere      bool   `json:"active_controller_here"`
	BrokersKnown    int    `json:"brokers_known"`
	ZKState         string `json:"zk_state"`
	ZKConnected     bool   `json:"zk_connected"`
	ZKSessionID     string `json:"zk_session_id"`
	// Disagrees: it sees another controller than this broker does (a view is stale, or an
	// election is under way).
	Disagrees bool `json:"disagrees,omitempty"`
}

func (b *Broker) clusterData() webClusterData {
	d := webClusterData{BrokerID: b.brokerID, HTTP: b.HTTPAddr(), ControllerID: -1, ControllerEpoch: -1}
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

// viewOf is d as one row of the brokers' views.
func (d webClusterData) viewOf() webBrokerView {
	return webBrokerView{ID: d.BrokerID, HTTP: d.HTTP, Answered: true, ControllerID: d.ControllerID, ControllerEpoch: d.ControllerEpoch,
		ActiveHere: d.ActiveHere, BrokersKnown: len(d.Brokers), ZKState: d.ZKState, ZKConnected: d.ZKConnected, ZKSessionID: d.ZKSessionID}
}

// addViews gathers every live peer's cluster page and lists the views by broker id.
func (b *Broker) addViews(d *webClusterData) {
	self := d.viewOf()
	self.Self = true
	d.Views = []webBrokerView{self}
	for id, a := range b.webGatherPeers("/").answers {
		v := webBrokerView{ID: id, HTTP: a.HTTP, Error: a.Err, ControllerID: -1, ControllerEpoch: -1}
		var pd webClusterData
		if a.Err == "" {
			if err := json.Unmarshal(a.Body, &pd); err != nil {
				v.Error = "its page is not the cluster view's JSON: " + err.Error()
			} else {
				v = pd.viewOf()
				v.HTTP = a.HTTP
				v.Disagrees = v.ControllerID != d.ControllerID
			}
		}
		d.Views = append(d.Views, v)
	}
	sort.Slice(d.Views, func(i, j int) bool { return d.Views[i].ID < d.Views[j].ID })
	for _, v := range d.Views {
		switch {
		case v.ID != d.ControllerID:
		case v.Self:
			d.ControllerPage = "/controller"
		case v.HTTP != "":
			d.ControllerPage = (&url.URL{Scheme: "http", Host: v.HTTP, Path: "/controller"}).String()
		}
	}
}

var webClusterTmpl = template.Must(template.New("cluster").Parse(`
<p>This broker: <b>{{.BrokerID}}</b>. Controller: <b>{{.ControllerID}}</b>{{if .ActiveHere}} (this broker is the active kafka.controller.KafkaController){{end}}{{if .ControllerPage}} (<a href="{{.ControllerPage}}">its event queue</a>){{end}},
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
{{if .Views}}<h2>Every broker's view</h2>
<p class="src">each live broker's own cluster page (?scope=local), found through DescribeConfigs of its samsa.http.listener: the controller it sees (its MetadataCache) and its kafka.zookeeper.ZooKeeperClient session</p>
<table><tr><th>broker</th><th>internals view</th><th>answered</th><th>controller it sees</th><th>controller epoch</th><th>live brokers it knows</th><th>ZooKeeper state</th><th>session id</th></tr>
{{range .Views}}<tr><td>{{.ID}}{{if .Self}} (this broker){{end}}</td><td>{{if .HTTP}}<a href="http://{{.HTTP}}/">{{.HTTP}}</a>{{end}}</td>
{{if .Answered}}<td>yes</td><td>{{.ControllerID}}{{if .ActiveHere}} (itself){{end}}{{if .Disagrees}} <b>differs</b>{{end}}</td><td>{{.ControllerEpoch}}</td><td>{{.BrokersKnown}}</td><td>{{.ZKState}}{{if not .ZKConnected}} (not connected){{end}}</td><td>{{.ZKSessionID}}</td>
{{else}}<td><b>no answer</b></td><td colspan="5">{{.Error}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<p><a href="/partitions">partitions</a> · <a href="/groups">consumer groups</a> · <a href="/zk">ZooKeeper tree</a> · <a href="/metrics">metrics</a></p>
`))

func (b *Broker) webCluster(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		notFound(w, "no page %q in the internals view", r.URL.Path)
		return
	}
	d := b.clusterData()
	if !webLocalOnly(r) {
		b.addViews(&d)
	}
	webRender(w, r, "cluster", "ZooKeeper /controller, /brokers/ids/<id>; kafka.server.MetadataCache; the other brokers' pages", webClusterTmpl, d)
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
	Size           int64         `json:"size,omitempty"`
	Followers      []webFollower `json:"followers,omitempty"`
	// ReplicaViews is every replica as its own broker reports it (absent with ?scope=local).
	ReplicaViews []webReplicaView `json:"replica_views,omitempty"`
}

// webReplicaView is one replica of a partition as the broker holding it reports it.
type webReplicaView struct {
	Broker   int32  `json:"broker"`
	HTTP     string `json:"http,omitempty"` // its broker's internals view
	Answered bool   `json:"answered"`       // its broker answered (this broker always does)
	Hosted   bool   `json:"hosted"`         // its broker holds a log for it
	Role     string `json:"role,omitempty"` // leader or follower, as its broker sees itself
	// kafka.log.UnifiedLog on its broker.
	LogStartOffset int64 `json:"log_start_offset"`
	LogEndOffset   int64 `json:"log_end_offset"`
	HighWatermark  int64 `json:"high_watermark"`
	Size           int64 `json:"size"`
	// Lag is the leader's log end offset (as the leader reports it) minus this one's; -1
	// when either is unknown. Views are taken up to a second apart, so it is approximate.
	Lag  int64  `json:"lag"`
	Note string `json:"note,omitempty"` // why there is nothing to show
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
	wp.Size = l.Size()
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

// webPeerPartitions is one peer's /partitions answer, by topic-partition.
type webPeerPartitions struct {
	answer webPeerAnswer
	parts  map[logstore.TopicPartition]webPartition
}

// peerPartitions decodes the gathered /partitions answers, once per fan-out.
func (g *webGather) peerPartitions() map[int32]webPeerPartitions {
	g.partsOnce.Do(func() {
		g.parts = map[int32]webPeerPartitions{}
		for id, a := range g.answers {
			pp := webPeerPartitions{answer: a, parts: map[logstore.TopicPartition]webPartition{}}
			if a.Err == "" {
				var list []webPartition
				if err := json.Unmarshal(a.Body, &list); err != nil {
					pp.answer.Err = "its page is not the partitions view's JSON: " + err.Error()
				}
				for _, p := range list {
					pp.parts[logstore.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p
				}
			}
			g.parts[id] = pp
		}
	})
	return g.parts
}

// addReplicaViews gathers the peers' own partitions and sets every partition's replica views.
func (b *Broker) addReplicaViews(parts []webPartition) {
	peers := b.webGatherPeers("/partitions").peerPartitions()
	self := b.HTTPAddr()
	for i := range parts {
		wp := &parts[i]
		tp := logstore.TopicPartition{Topic: wp.Topic, Partition: wp.Partition}
		views := make([]webReplicaView, 0, len(wp.Replicas))
		for _, id := range wp.Replicas {
			v := webReplicaView{Broker: id, LogStartOffset: -1, LogEndOffset: -1, HighWatermark: -1, Size: -1, Lag: -1}
			var rp webPartition
			switch pp, ok := peers[id]; {
			case id == b.brokerID:
				v.HTTP, v.Answered, rp = self, true, *wp
			case !ok:
				v.Note = "broker " + strconv.Itoa(int(id)) + " is not alive (not registered at /brokers/ids)"
			case pp.answer.Err != "":
				v.HTTP, v.Note = pp.answer.HTTP, "no answer: "+pp.answer.Err
			default:
				v.HTTP, v.Answered, rp = pp.answer.HTTP, true, pp.parts[tp]
			}
			if v.Answered && !rp.Hosted {
				v.Note = "no log for it on its broker (not yet created, or being deleted)"
			}
			if rp.Hosted {
				v.Hosted, v.Role = true, "follower"
				if rp.IsLeader {
					v.Role = "leader"
				}
				v.LogStartOffset, v.LogEndOffset, v.HighWatermark, v.Size = rp.LogStartOffset, rp.LogEndOffset, rp.HighWatermark, rp.Size
			}
			views = append(views, v)
		}
		leaderLEO := int64(-1)
		for _, v := range views {
			if v.Broker == wp.Leader && v.Role == "leader" {
				leaderLEO = v.LogEndOffset
			}
		}
		for j := range views {
			if leaderLEO >= 0 && views[j].Hosted {
				views[j].Lag = max(leaderLEO-views[j].LogEndOffset, 0)
			}
		}
		wp.ReplicaViews = views
	}
}

var webPartitionsTmpl = template.Must(template.New("partitions").Parse(`
<p class="src">leader, epoch, ISR, replicas: kafka.server.MetadataCache (ZooKeeper /brokers/topics/&lt;topic&gt;/partitions/&lt;p&gt;/state);
replicas' offsets: kafka.log.UnifiedLog on each replica's broker (its own page, gathered; lag = leader's log end offset − the replica's);
followers as the leader sees them: kafka.cluster.Replica (this broker's leaders only)</p>
<table><tr><th>topic</th><th>partition</th><th>leader</th><th>leader epoch</th><th>ISR</th><th>replicas</th>
<th>here</th><th>log start</th><th>log end offset</th><th>high watermark</th><th>followers (LEO / lag)</th><th>every replica (broker: role, log start / LEO / HW, size, lag)</th></tr>
{{range .}}<tr><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{.Leader}}</td><td>{{.LeaderEpoch}}</td><td>{{.ISR}}</td><td>{{.Replicas}}{{if .Offline}} offline {{.Offline}}{{end}}</td>
{{if .Hosted}}<td><a href="/segments?topic={{.Topic}}&amp;partition={{.Partition}}">{{if .IsLeader}}leader{{else}}follower{{end}}</a></td>
<td>{{.LogStartOffset}}</td><td>{{.LogEndOffset}}</td><td>{{.HighWatermark}}</td>
<td>{{range .Followers}}{{.ID}}: {{if lt .LogEndOffset 0}}not fetched yet{{else}}{{.LogEndOffset}} / {{.Lag}}{{end}}<br>{{end}}</td>
{{else}}<td>—</td><td></td><td></td><td></td><td></td>{{end}}
<td>{{$t := .Topic}}{{$p := .Partition}}{{range .ReplicaViews}}{{.Broker}}: {{if .Hosted}}{{if .HTTP}}<a href="http://{{.HTTP}}/segments?topic={{$t}}&amp;partition={{$p}}">{{.Role}}</a>{{else}}{{.Role}}{{end}}, {{.LogStartOffset}} / {{.LogEndOffset}} / {{.HighWatermark}}, {{.Size}} B, lag {{if ge .Lag 0}}{{.Lag}}{{else}}?{{end}}{{else}}<i>{{.Note}}</i>{{end}}<br>{{end}}</td></tr>
{{end}}</table>
`))

func (b *Broker) webPartitions(w http.ResponseWriter, r *http.Request) {
	d := b.partitionsData()
	if !webLocalOnly(r) {
		b.addReplicaViews(d)
	}
	webRender(w, r, "partitions", "kafka.server.MetadataCache, kafka.cluster.Partition, kafka.cluster.Replica, kafka.log.UnifiedLog on every replica's broker", webPartitionsTmpl, d)
}
