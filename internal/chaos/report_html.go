package chaos

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"
)

// The HTML report is one self-contained file: no script, no external style or font, the
// timeline an inline SVG, so it can be attached to a bug report or archived by CI.

const (
	svgWidth   = 1100
	svgLeft    = 64
	svgRight   = 16
	panelH     = 150
	panelGap   = 40
	svgTop     = 80
	maxVioRows = 2000
)

var colors = []string{"#c0392b", "#8e44ad", "#d35400", "#16a085", "#2c3e50", "#7f8c8d", "#b7950b", "#1f618d"}

// WriteHTML writes the report: the verdict, the counts, the timeline (throughput, p50/p99
// latency, errors per second, fault windows shaded and labelled, violations marked) and the
// violation table.
func WriteHTML(w io.Writer, h *History, r Result) error {
	type vrow struct {
		Kind, Value, Detail, When, Windows string
		Partition                          int32
		Offset                             string
	}
	type wrow struct {
		Seq                               int
		Action, Start, End, Detail, Error string
		Broker                            int32
		Color                             string
	}
	data := struct {
		Verdict, Run, Topic, Started, Length string
		Pass                                 bool
		Counts                               Counts
		SVG                                  template.HTML
		Windows                              []wrow
		Violations                           []vrow
		More                                 int
	}{
		Verdict: r.Verdict(), Pass: r.Pass(), Run: h.Run, Topic: h.Topic, Counts: r.Counts,
		Started: h.Start.UTC().Format("2006-01-02 15:04:05 UTC"), Length: h.End.Sub(h.Start).Round(time.Second).String(),
		SVG: template.HTML(timelineSVG(h, r)),
	}
	for _, fw := range h.Windows {
		end := "open"
		if !fw.End.IsZero() {
			end = "+" + rel(h, fw.End)
		}
		data.Windows = append(data.Windows, wrow{Seq: fw.Seq, Action: fw.Action, Broker: fw.Broker, Start: "+" + rel(h, fw.Start), End: end,
			Detail: fw.Detail, Error: fw.Err, Color: actionColor(fw.Action)})
	}
	for i, v := range r.Violations {
		if i == maxVioRows {
			data.More = len(r.Violations) - i
			break
		}
		off := "–"
		if v.Offset >= 0 {
			off = fmt.Sprint(v.Offset)
		}
		when := ""
		if !v.Time.IsZero() {
			when = "+" + rel(h, v.Time)
		}
		data.Violations = append(data.Violations, vrow{Kind: v.Kind, Partition: v.Partition, Offset: off, Value: v.Value,
			Detail: v.Detail, When: when, Windows: windowNames(h, v)})
	}
	return reportTmpl.Execute(w, data)
}

// actionColors keeps the built-in faults apart on the timeline; other actions (hooks) get a
// colour from their name.
var actionColors = map[string]string{
	"kill-leader": "#c0392b", "kill-controller": "#922b21", "kill-random": "#e74c3c", "term-leader": "#d35400",
	"pause-leader": "#8e44ad", "pause-controller": "#5b2c6f", "expire-zk-session": "#b7950b", "cut-broker": "#16a085",
}

func actionColor(action string) string {
	if c, ok := actionColors[action]; ok {
		return c
	}
	var sum int
	for _, c := range action {
		sum += int(c)
	}
	return colors[sum%len(colors)]
}

// timelineSVG draws three panels over the run's seconds: acknowledged and consumed records
// per second, p50/p99 acknowledgement latency, errors per second; fault windows are shaded
// across all panels and labelled on top, violations are red ticks under the last panel.
func timelineSVG(h *History, r Result) string {
	secs := perSecond(h)
	total := h.End.Sub(h.Start).Seconds()
	if total <= 0 {
		total = 1
	}
	plotW := float64(svgWidth - svgLeft - svgRight)
	x := func(t time.Time) float64 {
		return svgLeft + math.Max(0, math.Min(1, t.Sub(h.Start).Seconds()/total))*plotW
	}
	xs := func(i int) float64 { return svgLeft + math.Min(1, (float64(i)+0.5)/total)*plotW }
	height := svgTop + 3*(panelH+panelGap) + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`,
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`, svgWidth, height)
	bottom := float64(svgTop + 3*(panelH+panelGap) - panelGap)

	// Fault windows first, under the curves. Labels are staggered over three rows; when the
	// windows are too close for names, a window is labelled with its number only and the
	// legend gives the colours of the actions.
	short := len(h.Windows) > 0 && plotW/float64(len(h.Windows)) < 150
	legendX := float64(svgLeft)
	seenAction := map[string]bool{}
	for _, fw := range h.Windows {
		if seenAction[fw.Action] {
			continue
		}
		seenAction[fw.Action] = true
		fmt.Fprintf(&b, `<rect x="%.0f" y="8" width="10" height="10" fill="%s" fill-opacity="0.5"/><text x="%.0f" y="17">%s</text>`,
			legendX, actionColor(fw.Action), legendX+14, template.HTMLEscapeString(fw.Action))
		legendX += 24 + 7*float64(len(fw.Action))
	}
	for i, fw := range h.Windows {
		end := fw.End
		if end.IsZero() {
			end = h.End
		}
		x0, x1 := x(fw.Start), x(end)
		if x1-x0 < 1 {
			x1 = x0 + 1
		}
		col := actionColor(fw.Action)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.13"/>`, x0, svgTop, x1-x0, bottom-svgTop, col)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s"/>`, x0, x0, svgTop-48+(i%2)*10, svgTop, col)
		label := fmt.Sprintf("#%d %s b%d", fw.Seq, fw.Action, fw.Broker)
		if short {
			label = fmt.Sprintf("#%d", fw.Seq)
		}
		if fw.Err != "" {
			label += " (failed)"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="%s" font-size="10">%s<title>%s</title></text>`, x0+2, svgTop-40+(i%2)*10, col,
			template.HTMLEscapeString(label), template.HTMLEscapeString(describeWindow(h, fw)))
	}

	type series struct {
		name, color string
		v           func(s second) float64
	}
	panels := []struct {
		title, unit string
		log         bool // logarithmic axis from 1
		series      []series
	}{
		{"throughput", "records/s", false, []series{
			{"acknowledged", "#2471a3", func(s second) float64 { return float64(s.acks) }},
			{"consumed", "#28b463", func(s second) float64 { return float64(s.consumed) }},
		}},
		// Logarithmic: milliseconds when all is well and tens of seconds during a fault, on
		// one axis.
		{"acknowledgement latency", "ms, log scale", true, []series{
			{"p50", "#2471a3", func(s second) float64 { return s.p50 }},
			{"p99", "#cb4335", func(s second) float64 { return s.p99 }},
		}},
		{"errors", "per second", false, []series{
			{"errors", "#cb4335", func(s second) float64 { return float64(s.errors) }},
		}},
	}
	for pi, p := range panels {
		top := float64(svgTop + pi*(panelH+panelGap))
		maxV := 1.0
		for _, s := range p.series {
			for _, sec := range secs {
				maxV = math.Max(maxV, s.v(sec))
			}
		}
		var y func(v float64) float64
		var ticks []float64
		if p.log {
			decades := math.Max(1, math.Ceil(math.Log10(maxV)))
			maxV = math.Pow(10, decades)
			y = func(v float64) float64 { return top + panelH - math.Log10(math.Max(1, v))/decades*panelH }
			for d := 0.0; d <= decades; d++ {
				ticks = append(ticks, math.Pow(10, d))
			}
		} else {
			maxV = niceCeil(maxV)
			y = func(v float64) float64 { return top + panelH - v/maxV*panelH }
			ticks = []float64{0, maxV / 2, maxV}
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.0f" height="%d" fill="none" stroke="#999"/>`, svgLeft, top, plotW, panelH)
		for _, v := range ticks {
			fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, svgLeft, svgLeft+plotW, y(v), y(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`, svgLeft-4, y(v)+4, fmtNum(v))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-weight="bold">%s <tspan font-weight="normal" fill="#555">(%s)</tspan></text>`, 4, top-12, p.title, p.unit)
		lx := float64(svgLeft + 260)
		for _, s := range p.series {
			fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="%s" stroke-width="2"/><text x="%.0f" y="%.0f">%s</text>`,
				lx, lx+16, top-16, top-16, s.color, lx+20, top-12, s.name)
			lx += 110
			if len(p.series) == 1 {
				// one series: bars
				for i, sec := range secs {
					if v := s.v(sec); v > 0 {
						bw := math.Max(1, plotW/total-1)
						fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, xs(i)-bw/2, y(v), bw, top+panelH-y(v), s.color)
					}
				}
				continue
			}
			// A second without acknowledgements has no latency: the line breaks there.
			var pts []string
			line := func() {
				if len(pts) > 0 {
					fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, s.color, strings.Join(pts, " "))
				}
				pts = pts[:0]
			}
			for i, sec := range secs {
				if p.log && s.v(sec) == 0 {
					line()
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xs(i), y(s.v(sec))))
			}
			line()
		}
	}
	// Time axis and violation ticks.
	step := niceCeil(total / 10)
	for t := 0.0; t <= total; t += step {
		px := svgLeft + t/total*plotW
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#999"/><text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%ss</text>`,
			px, px, bottom, bottom+4, px, bottom+16, fmtNum(t))
	}
	for _, v := range r.Violations {
		if v.Time.IsZero() {
			continue
		}
		px := x(v.Time)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#e00" stroke-width="2"><title>%s</title></line>`,
			px, px, bottom-10, bottom, template.HTMLEscapeString(v.Kind+" p"+fmt.Sprint(v.Partition)))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

var reportTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>samsa chaos: {{.Verdict}}</title>
<style>
body{font-family:sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 6px}
.pass{color:#1e8449}.fail{color:#c0392b}
table{border-collapse:collapse;font-size:13px;margin:8px 0 18px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}
.meta{color:#555;margin-bottom:12px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px}
code{font-size:12px}
</style></head><body>
<h1 class="{{if .Pass}}pass{{else}}fail{{end}}">{{.Verdict}}</h1>
<div class="meta">run {{.Run}} · topic {{.Topic}} · started {{.Started}} · {{.Length}}</div>
<table><tr><th>acknowledged</th><th>not acknowledged</th><th>consumed</th><th>final read</th><th>transactions committed / aborted / unknown</th><th>assignments</th><th>commit polls</th><th>faults (failed)</th></tr>
<tr><td>{{.Counts.Acked}}</td><td>{{.Counts.Failed}}</td><td>{{.Counts.Consumed}}</td><td>{{.Counts.FinalRecords}}</td><td>{{.Counts.TxnCommitted}} / {{.Counts.TxnAborted}} / {{.Counts.TxnUnknown}}</td><td>{{.Counts.Assignments}}</td><td>{{.Counts.CommitPolls}}</td><td>{{.Counts.Faults}} ({{.Counts.FaultErrs}})</td></tr></table>
{{.SVG}}
<h2>Faults</h2>
{{if .Windows}}<table><tr><th>#</th><th>action</th><th>broker</th><th>from</th><th>to</th><th>detail</th><th>error</th></tr>
{{range .Windows}}<tr><td><span class="sw" style="background:{{.Color}}"></span>{{.Seq}}</td><td>{{.Action}}</td><td>{{.Broker}}</td><td>{{.Start}}</td><td>{{.End}}</td><td>{{.Detail}}</td><td>{{.Error}}</td></tr>
{{end}}</table>{{else}}<p>No faults were applied.</p>{{end}}
<h2>Violations</h2>
{{if .Violations}}<table><tr><th>kind</th><th>partition</th><th>offset</th><th>record</th><th>when</th><th>detail</th><th>fault window</th></tr>
{{range .Violations}}<tr><td>{{.Kind}}</td><td>{{.Partition}}</td><td>{{.Offset}}</td><td><code>{{.Value}}</code></td><td>{{.When}}</td><td>{{.Detail}}</td><td>{{.Windows}}</td></tr>
{{end}}</table>{{if .More}}<p>… and {{.More}} more (all of them are in the text output).</p>{{end}}{{else}}<p>None: every acknowledged record was read back at its offset, in order, once; no aborted or uncommitted record was read; no partition had two owners in a generation; committed offsets never went backwards.</p>{{end}}
</body></html>
`))
