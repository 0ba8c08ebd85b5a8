package broker

// webview_common.go — the internals view's common page layout and input checks. Pages render
// server-side with html/template; a small inline script re-fetches the page's body
// (?format=body) every 2 s and swaps it in, so no front-end build step is needed. Every page
// is also JSON with ?format=json.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// webPageTmpl is the layout every page shares: title, the Kafka source the data comes from,
// navigation, and the body. The script polls the same URL for a fresh body (?format=body).
var webPageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>samsa · {{.Title}}</title>
<style>
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.2em .6em;text-align:left;font-size:.9em}
th{background:#f0f0f0}
.src{color:#666;font-size:.85em}
nav a{margin-right:1em}
</style></head><body>
<nav><a href="/">cluster</a><a href="/partitions">partitions</a><a href="/controller">controller</a><a href="/groups">groups</a><a href="/zk">zookeeper</a><a href="/metrics">metrics</a></nav>
<h1>{{.Title}}</h1>
<p class="src">source: {{.Source}}</p>
<div id="body">{{.Body}}</div>
<script>
setInterval(function(){
  var u=new URL(location.href);u.searchParams.set("format","body");
  fetch(u).then(function(r){return r.ok?r.text():null}).then(function(t){if(t!==null)document.getElementById("body").innerHTML=t}).catch(function(){});
},2000);
</script>
</body></html>
`))

// renderPage writes a full page around body; with ?format=body only the body (for the poll).
func renderPage(w http.ResponseWriter, r *http.Request, title, source string, body template.HTML) {
	if r != nil && r.URL.Query().Get("format") == "body" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(body))
		return
	}
	var buf bytes.Buffer
	if err := webPageTmpl.Execute(&buf, struct {
		Title, Source string
		Body          template.HTML
	}{title, source, body}); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// renderTemplate executes t with data into HTML for renderPage's body.
func renderTemplate(t *template.Template, data any) (template.HTML, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil // #nosec: produced by html/template, already escaped
}

// wantJSON reports whether the request asked for the page's data as JSON (?format=json).
func wantJSON(r *http.Request) bool { return r.URL.Query().Get("format") == "json" }

// writeJSON writes v as indented JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// badRequest answers a plain-text 400.
func badRequest(w http.ResponseWriter, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), http.StatusBadRequest)
}

// notFound answers a plain-text 404.
func notFound(w http.ResponseWriter, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), http.StatusNotFound)
}

// readOnly allows only GET and HEAD (405 otherwise): nothing writes through the web view. A
// panicking page answers 500 instead of dropping the connection (net/http's own recovery).
func readOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				http.Error(w, fmt.Sprintf("internal error: %v", v), http.StatusInternalServerError)
			}
		}()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: the internals view is read-only", http.StatusMethodNotAllowed)
			return
		}
		h(w, r)
	}
}

// queryInt parses the query parameter name as a decimal integer within [min, max].
func queryInt(r *http.Request, name string, min, max int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, fmt.Errorf("missing parameter %q", name)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parameter %q: %q is not a decimal integer", name, s)
	}
	if v < min || v > max {
		return 0, fmt.Errorf("parameter %q: %d is outside [%d, %d]", name, v, min, max)
	}
	return v, nil
}

// queryName reads a topic or group name and rejects what Kafka's Topic.validate would never
// accept here: empty, over 249 characters, "/", "..", NUL or other control characters.
func queryName(r *http.Request, name string) (string, error) {
	s := r.URL.Query().Get(name)
	switch {
	case s == "":
		return "", fmt.Errorf("missing parameter %q", name)
	case len(s) > 249:
		return "", fmt.Errorf("parameter %q: longer than 249 characters", name)
	case strings.Contains(s, "/"), strings.Contains(s, ".."), s == ".":
		return "", fmt.Errorf("parameter %q: %q contains a path separator or \"..\"", name, s)
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("parameter %q: contains a control character", name)
		}
	}
	return s, nil
}

// webRender answers with JSON for ?format=json, else the page (or its body for the poll).
func webRender(w http.ResponseWriter, r *http.Request, title, source string, t *template.Template, data any) {
	if wantJSON(r) {
		writeJSON(w, data)
		return
	}
	body, err := renderTemplate(t, data)
	if err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	renderPage(w, r, title, source, body)
}
