package broker

// webview_controller.go — the internals view's controller page: the controller's event
// queue (kafka.controller.ControllerEventManager: the event in process, the queued ones, the
// last processed with their queue and processing times, the ControllerState) and a live
// tail of this broker's state-change log (state.change.logger, Kafka's state-change.log;
// statechange_log.go), filterable by topic.

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/samsa-kafka/samsa/controller"
	"github.com/samsa-kafka/samsa/internal/statechange"
)

// addWebViewController mounts the controller page.
func (b *Broker) addWebViewController(mux *http.ServeMux) {
	mux.HandleFunc("/controller", readOnly(b.webController))
}

// webTailDefault is how many state-change entries the page shows without ?limit=.
const webTailDefault = 200

type webControllerData struct {
	BrokerID int32 `json:"broker_id"`
	// ControllerID is the active controller as this broker last heard (MetadataCache), -1
	// when unknown; ControllerURL its controller page, "" when its HTTP listener is unknown.
	ControllerID  int32                     `json:"controller_id"`
	ControllerURL string                    `json:"controller_url,omitempty"`
	EventQueue    controller.EventQueueInfo `json:"event_queue"`
	// The state-change log: its file ("" when none), the topic filter, the topics present
	// in the tail, and the entries, newest first.
	StateChangeFile string              `json:"state_change_log_file,omitempty"`
	TailKept        int                 `json:"state_change_tail_kept"`
	Topic           string              `json:"topic_filter,omitempty"`
	Topics          []string            `json:"state_change_topics"`
	StateChanges    []statechange.Entry `json:"state_changes"`
}

// The topic filter is links, not a form: the page's 2 s body swap would reset an input
// while it is typed in.
var webControllerTmpl = template.Must(template.New("controller").Funcs(template.FuncMap{
	"clock":  func(t time.Time) string { return t.Format("15:04:05.000") },
	"fields": webFieldsString,
}).Parse(`
{{with .EventQueue}}{{if .Active}}
<p>This broker (<b>{{.BrokerID}}</b>) is the active controller (kafka.controller.KafkaController), controller epoch <b>{{.Epoch}}</b>.
ControllerState: <b id="controller-state">{{.State}}</b>. Events processed here since start: {{.Processed}}.</p>
{{else}}
<p>This broker (<b>{{.BrokerID}}</b>) is not the active controller{{if .Epoch}} (it was, up to controller epoch {{.Epoch}}){{end}}.
{{if ge $.ControllerID 0}}The controller is broker <b id="controller-id">{{$.ControllerID}}</b>{{if $.ControllerURL}}: see <a id="controller-link" href="{{$.ControllerURL}}">its controller page</a>{{end}}.{{else}}No controller is known.{{end}}
<span class="src">(as this broker last heard in UpdateMetadata: kafka.server.MetadataCache)</span></p>
{{end}}
<h2>Event being processed</h2>
<p class="src">kafka.controller.ControllerEventManager's ControllerEventThread: one event at a time, in order</p>
{{with .Processing}}<table><tr><th>event</th><th>detail</th><th>ControllerState</th><th>enqueued</th><th>started</th><th>waited (ms)</th><th>running for (ms)</th></tr>
<tr><td>{{.Name}}</td><td>{{.Arg}}</td><td>{{.State}}</td><td>{{clock .Enqueued}}</td><td>{{clock .Started}}</td><td>{{printf "%.3f" .QueueTimeMs}}</td><td>{{printf "%.3f" .ProcessTimeMs}}</td></tr></table>
{{else}}<p>none (Idle)</p>{{end}}
<h2>Queued events ({{len .Queued}})</h2>
<p class="src">ControllerEventManager's queue (EventQueueSize), oldest first</p>
{{if .Queued}}<table><tr><th>event</th><th>detail</th><th>ControllerState</th><th>enqueued</th><th>waiting (ms)</th></tr>
{{range .Queued}}<tr><td>{{.Name}}</td><td>{{.Arg}}</td><td>{{.State}}</td><td>{{clock .Enqueued}}</td><td>{{printf "%.3f" .QueueTimeMs}}</td></tr>
{{end}}</table>{{else}}<p>empty</p>{{end}}
<h2>Recently processed ({{len .Recent}})</h2>
<p class="src">newest first; queue time is EventQueueTimeMs, processing time the ControllerStats &lt;State&gt;RateAndTimeMs timer</p>
<table id="recent-events"><tr><th>event</th><th>detail</th><th>ControllerState</th><th>epoch</th><th>enqueued</th><th>started</th><th>queue time (ms)</th><th>processing time (ms)</th><th>error</th></tr>
{{range .Recent}}<tr><td>{{.Name}}</td><td>{{.Arg}}</td><td>{{.State}}</td><td>{{.Epoch}}</td><td>{{clock .Enqueued}}</td><td>{{clock .Started}}</td><td>{{printf "%.3f" .QueueTimeMs}}</td><td>{{printf "%.3f" .ProcessTimeMs}}</td><td>{{.Error}}</td></tr>
{{end}}</table>
{{end}}
<h2>State-change log</h2>
<p class="src">state.change.logger (Kafka's state-change.log): partition and replica state transitions by KafkaController,
PartitionStateMachine, ReplicaStateMachine and ReplicaManager on this broker;
{{if .StateChangeFile}}also written to <code>{{.StateChangeFile}}</code>{{else}}no file (samsa.state.change.log.file is not set){{end}};
the last {{.TailKept}} entries are kept here, newest first</p>
<p>{{if .Topic}}Only topic <b>{{.Topic}}</b>: <a href="/controller">all topics</a>.{{else}}Keep one topic's (<code>?topic=</code>):{{end}}
{{range .Topics}}<a href="/controller?topic={{.}}">{{.}}</a> {{end}}</p>
<table id="state-changes"><tr><th>time</th><th>level</th><th>message</th><th>partition</th><th>fields</th></tr>
{{range .StateChanges}}<tr><td>{{.Time.Format "2006-01-02 15:04:05.000"}}</td><td>{{.Level}}</td><td>{{.Message}}</td><td>{{.Topic}}{{with .Partition}}-{{.}}{{end}}</td><td>{{fields .Fields}}</td></tr>
{{end}}</table>
`))

// webFieldsString prints an entry's fields as sorted key=value pairs.
func webFieldsString(f map[string]string) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%s=%s", k, f[k])
	}
	return sb.String()
}

func (b *Broker) controllerData(topic string, limit int) webControllerData {
	d := webControllerData{BrokerID: b.brokerID, ControllerID: -1, Topic: topic, Topics: []string{}, StateChanges: []statechange.Entry{}}
	if b.ctrl != nil {
		d.EventQueue = b.ctrl.EventQueue()
	}
	if b.metadata != nil {
		d.ControllerID = b.metadata.ControllerID()
		if d.ControllerID >= 0 && d.ControllerID != b.brokerID {
			d.ControllerURL = b.webControllerURL(d.ControllerID)
		}
	}
	if l := b.stateChanges; l != nil {
		d.StateChangeFile, d.TailKept, d.Topics = l.File(), l.Keep(), l.Topics()
		tail := l.Tail(topic, limit)
		for i := len(tail) - 1; i >= 0; i-- {
			d.StateChanges = append(d.StateChanges, tail[i])
		}
	}
	return d
}

func (b *Broker) webController(w http.ResponseWriter, r *http.Request) {
	var topic string
	if r.URL.Query().Get("topic") != "" { // "" or absent: every topic
		t, err := queryName(r, "topic")
		if err != nil {
			badRequest(w, "%v", err)
			return
		}
		topic = t
	}
	limit := webTailDefault
	if r.URL.Query().Has("limit") {
		n, err := queryInt(r, "limit", 1, statechange.DefaultKeep)
		if err != nil {
			badRequest(w, "%v", err)
			return
		}
		limit = int(n)
	}
	d := b.controllerData(topic, limit)
	webRender(w, r, "controller", "kafka.controller.ControllerEventManager, ControllerState; state.change.logger (state-change.log)",
		webControllerTmpl, d)
}

// webControllerURL is broker id's controller page on its samsa.http.listener (found as the
// cluster pages find their peers', webview_remote.go), "" when that is not known.
func (b *Broker) webControllerURL(id int32) string {
	if b.metadata == nil {
		return ""
	}
	bm, ok := b.metadata.Broker(id)
	if !ok {
		return ""
	}
	addr, err := b.webPeerHTTP(b.webRemote(), bm)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: "http", Host: addr, Path: "/controller"}).String()
}
