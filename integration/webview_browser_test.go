package integration

// The internals view (samsa.http.listener) in a real browser: headless Chromium renders the
// pages of a 3-broker cluster, and the test reads what it shows — the cluster, a partition's
// segments, a sarama group's lag, "follow a record" for a record it produced — then kills a
// partition leader and watches the partitions page change in place (the page re-fetches its
// body every 2 s; it must not reload). SAMSA_SCREENSHOTS=<dir> also writes PNGs of the pages.

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestWebViewBrowser(t *testing.T) {
	browser := startBrowser(t) // first: skipping costs nothing when there is no Chromium
	// A small __consumer_offsets (replicated like the topic) keeps the partitions page short;
	// the sarama member's 3 s session needs a lower floor than Kafka's 6 s.
	c, httpAddrs := metricsCluster(t, map[string]string{
		"group.min.session.timeout.ms":     "1000",
		"offsets.topic.num.partitions":     "3",
		"offsets.topic.replication.factor": "3",
	})
	page := func(id int32, path string) string { return "http://" + httpAddrs[id] + path }
	const topic, groupID = "web-orders", "web-readers"
	// Small segments and a dense offset index, so the segments page has several segments
	// and "follow a record" finds an index entry before it scans.
	createTopic(t, c, topic, 3, 3, map[string]*string{
		"segment.bytes":        kmsg.StringPtr("1200"),
		"index.interval.bytes": kmsg.StringPtr("150"),
	})
	replWaitFullISR(t, c, topic, 3, 3, 30*time.Second)

	// A group member reads everything but marks consumed only the first 60 records (one
	// batch each); it stays in the group while 30 more arrive, so its lag per partition is
	// what each partition got of the 30.
	acksAll := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
	first := kgoProduceWith(t, c, topic, 0, 60, true, nil, acksAll...)
	marked := webMarkBelow{}
	for _, r := range first {
		marked[r.Partition] = max(marked[r.Partition], r.Offset+1)
	}
	member := runSaramaMember(t, c, groupID, topic, saramaMemberConfig("web-reader", &sarama.V3_7_0_0), marked)
	waitCommittedEnds(t, c, groupID, topic, first)
	second := kgoProduceWith(t, c, topic, 60, 30, false, nil, acksAll...)
	ends := map[int32]int64{}
	for _, r := range append(slices.Clone(first), second...) {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	committed := map[int32]int64(marked) // waitCommittedEnds saw these committed

	ctl := c.WaitController(30 * time.Second)
	leaders := map[int32]int32{}
	for p := range int32(3) {
		l, _, err := replLeader(c, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		leaders[p] = l
	}

	t.Run("cluster", func(t *testing.T) {
		br := browser.on(t)
		br.open(page(ctl, "/"))
		want := []string{"Controller"}
		for _, b := range c.Brokers {
			want = append(want, b.Addr()) // each live broker's endpoint, from MetadataCache
		}
		text := br.waitText(want...)
		if !regexp.MustCompile(`(?i)controller\D{0,20}\b` + strconv.Itoa(int(ctl)) + `\b`).MatchString(text) {
			t.Errorf("cluster page does not name broker %d (/controller) as the controller:\n%s", ctl, tail(text, 2000))
		}
		br.screenshot("cluster")
	})

	t.Run("segments", func(t *testing.T) {
		br := browser.on(t)
		br.open(page(leaders[0], fmt.Sprintf("/segments?topic=%s&partition=0", topic)))
		// Segments named by their 20-digit base offset, as LogSegment names its files, the
		// first from offset 0; the log end offset is what the producers were acknowledged.
		text := br.waitText("00000000000000000000.log", "LogSegment")
		if files := webSegmentFiles(text); len(files) < 2 {
			t.Errorf("segment.bytes=1200 and %d records: want several segments on the page, it shows %v", ends[0], files)
		}
		if !regexp.MustCompile(`(?i)log end offset\W{0,3}` + strconv.FormatInt(ends[0], 10) + `\b`).MatchString(text) {
			t.Errorf("segments page does not show log end offset %d:\n%s", ends[0], tail(text, 2000))
		}
		br.screenshot("segments")
	})

	t.Run("group", func(t *testing.T) {
		br := browser.on(t)
		coord := webGroupCoordinator(t, c, groupID)
		br.open(page(coord, "/group?id="+groupID))
		// The member is in the group (Kafka's GroupState Stable) with its client id.
		br.waitText(groupID, topic, "Stable", "web-reader")
		for p := range int32(3) {
			match := map[string]string{"topic": topic, "partition": strconv.Itoa(int(p))}
			wantLag := strconv.FormatInt(ends[p]-committed[p], 10)
			// The coordinator's own replica may be a follower a moment behind: wait for the
			// page's own refresh to catch up.
			waitFor(t, 30*time.Second, func() error {
				got, ok := br.cell("committed", match)
				if !ok || got != strconv.FormatInt(committed[p], 10) {
					return fmt.Errorf("partition %d: committed cell %q (found %v), want %d", p, got, ok, committed[p])
				}
				if got, _ := br.cell("lag", match); got != wantLag {
					return fmt.Errorf("partition %d: lag cell %q, want %s", p, got, wantLag)
				}
				return nil
			})
		}
		br.screenshot("group")
	})
	member.stop() // its committed offsets stay; before the broker kill below

	t.Run("follow", func(t *testing.T) {
		br := browser.on(t)
		// The last record the group marked (in a later segment than the first, just below
		// the committed offset), on the group's coordinator: every broker holds a replica,
		// and the page lists the groups this broker coordinates that committed past it.
		r := first[0]
		for _, x := range first {
			if x.Offset > r.Offset {
				r = x
			}
		}
		br.open(page(webGroupCoordinator(t, c, groupID), fmt.Sprintf("/follow?topic=%s&partition=%d&offset=%d", topic, r.Partition, r.Offset)))
		text := br.waitText(
			"OffsetIndex.lookup",
			fmt.Sprintf("offset %d is below the high watermark", r.Offset),
			fmt.Sprintf("%s at %d", groupID, committed[r.Partition]), // a group committed past it
		)
		// The segment found is the last one whose base offset is at most the record's.
		if files := webSegmentFiles(text); len(files) == 0 || files[0] > r.Offset {
			t.Errorf("follow %s-%d offset %d: segment %v", topic, r.Partition, r.Offset, files)
		}
		// The batch the scan stopped at holds the record.
		base, _ := br.rowValue("base offset")
		last, _ := br.rowValue("last offset")
		b, err1 := strconv.ParseInt(base, 10, 64)
		l, err2 := strconv.ParseInt(last, 10, 64)
		if err1 != nil || err2 != nil || b > r.Offset || l < r.Offset {
			t.Errorf("batch header base offset %q, last offset %q: does not hold offset %d", base, last, r.Offset)
		}
		br.screenshot("follow")
	})

	t.Run("zk", func(t *testing.T) {
		br := browser.on(t)
		br.open(page(ctl, fmt.Sprintf("/zk?path=/brokers/topics/%s/partitions/0/state", topic)))
		br.waitText(`"leader"`, `"isr"`, `"controller_epoch"`)
		br.screenshot("zk")
	})

	if br := browser.on(t); br.shots != "" { // the controller's page, where this build has one
		if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(page(ctl, "/controller")); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				br.open(page(ctl, "/controller"))
				br.screenshot("controller")
			}
		}
	}

	t.Run("partitions update after a leader is killed", func(t *testing.T) {
		br := browser.on(t)
		// Kill a leader that is not the controller (a controller change would only make
		// the wait longer); watch the page on a broker that stays up.
		p := int32(-1)
		for q := range int32(3) {
			if leaders[q] != ctl {
				p = q
				break
			}
		}
		if p < 0 {
			t.Fatalf("every partition of %s is led by the controller %d: %v", topic, ctl, leaders)
		}
		victim := leaders[p]
		watcher := ctl
		match := map[string]string{"topic": topic, "partition": strconv.Itoa(int(p))}
		br.open(page(watcher, "/partitions"))
		if got, ok := br.cell("leader", match); !ok || got != strconv.Itoa(int(victim)) {
			t.Fatalf("partitions page: leader of %s-%d is %q (found %v), want %d", topic, p, got, ok, victim)
		}
		br.screenshot("partitions")
		// A reload would drop this mark.
		if _, err := webRun(br, chromedp.Evaluate[chromedp.Void](`window.samsaNoReload = true`)); err != nil {
			t.Fatal(err)
		}
		c.Broker(victim).Kill()
		t.Logf("killed broker %d, leader of %s-%d; watching the partitions page of broker %d", victim, topic, p, watcher)
		var leader, isr string
		waitFor(t, 60*time.Second, func() error { // ZooKeeper session expiry (6 s), then the controller
			leader, _ = br.cell("leader", match)
			isr, _ = br.cell("isr", match)
			if leader == strconv.Itoa(int(victim)) || leader == "" || leader == "-1" || slices.Contains(webIDs(isr), victim) {
				return fmt.Errorf("%s-%d: page shows leader %q, ISR %q", topic, p, leader, isr)
			}
			return nil
		})
		kept, err := webRun(br, chromedp.Evaluate[bool](`window.samsaNoReload === true`))
		if err != nil || !kept {
			t.Fatalf("the partitions page was reloaded (mark gone: %v, %v); it must update in place", kept, err)
		}
		zkLeader, zkISR, err := replLeader(c, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if leader != strconv.Itoa(int(zkLeader)) {
			t.Errorf("page shows leader %s, the partition state znode %d (ISR %v)", leader, zkLeader, zkISR)
		}
		t.Logf("%s-%d on the page without a reload: leader %s, ISR %s", topic, p, leader, isr)
		br.screenshot("partitions-leader-killed")
	})
}

// rowValue reads a two-column table row (<th>name</th><td>value</td>) as rendered.
func (b *webBrowser) rowValue(name string) (string, bool) {
	b.t.Helper()
	v, err := webRun(b, chromedp.Evaluate[*string](fmt.Sprintf(`(function(name) {
  for (const th of document.querySelectorAll("tr > th:first-child")) {
    const td = th.nextElementSibling;
    if (td && td.tagName === "TD" && th.innerText.trim().toLowerCase() === name) return td.innerText.trim();
  }
  return null;
})(%q)`, name)))
	if err != nil {
		b.t.Fatalf("browser: read row %q: %v", name, err)
	}
	if v == nil {
		return "", false
	}
	return *v, true
}

var webIDRe = regexp.MustCompile(`-?\d+`)

// webIDs are the broker ids in a rendered list such as "[0 1 2]" or "0, 2".
func webIDs(s string) []int32 {
	var ids []int32
	for _, f := range webIDRe.FindAllString(s, -1) {
		if v, err := strconv.Atoi(f); err == nil {
			ids = append(ids, int32(v))
		}
	}
	return ids
}

// webGroupCoordinator asks the cluster which broker coordinates group (FindCoordinator).
func webGroupCoordinator(t *testing.T, c *Cluster, group string) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := adminClient(t, c).FindGroupCoordinators(ctx, group)[group]
	if resp.Err != nil {
		t.Fatalf("FindCoordinator %s: %v", group, resp.Err)
	}
	return resp.NodeID
}

// webSegmentFiles are the base offsets of the segment files (<20 digits>.log) a page names,
// in the order it names them, each once.
func webSegmentFiles(text string) []int64 {
	var out []int64
	for _, m := range webSegmentRe.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

var webSegmentRe = regexp.MustCompile(`\b(\d{20})\.log\b`)

// webMarkBelow is a sarama group handler that reads every record and marks as consumed
// only those below its partition's offset.
type webMarkBelow map[int32]int64

func (webMarkBelow) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (webMarkBelow) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h webMarkBelow) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for msg := range cl.Messages() {
		if msg.Offset < h[msg.Partition] {
			s.MarkMessage(msg, "")
		}
	}
	return nil
}
