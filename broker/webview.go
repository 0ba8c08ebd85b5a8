package broker

// webview.go — the internals view on samsa.http.listener: server-rendered pages that show a
// running broker's view of Kafka's machinery (cluster and controller, partitions and
// replicas, segments, groups, ZooKeeper), each naming the Kafka class or znode its data
// comes from. Read-only: no handler changes anything. Pages are in webview_*.go; each adds
// its routes in addWebView.

import (
	"net/http"
)

// addWebView mounts the internals view's pages on mux.
func (b *Broker) addWebView(mux *http.ServeMux) {
	b.addWebViewCluster(mux)    // webview_cluster.go
	b.addWebViewGroups(mux)     // webview_groups.go
	b.addWebViewController(mux) // webview_controller.go
}
