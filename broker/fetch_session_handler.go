package broker

// fetch_session_handler.go mirrors org.apache.kafka.clients.FetchSessionHandler and
// FetchMetadata: the client half of KIP-227 incremental fetch sessions, used by the
// replica fetchers (fetcher.go) as Kafka's RemoteLeaderEndPoint uses it.
//
//   - The first request is full with epoch 0 (INITIAL): it lists every partition and asks
//     the leader for a session. A response with session id 0 means none was created: the
//     next request is full again. Otherwise the next requests are incremental (id, 1, 2,
//     …, MaxInt32, 1, …) and carry only partitions added or whose fetch data changed
//     (topic id, fetch offset, log start offset, max bytes, current leader epoch, last
//     fetched epoch), and forget the partitions no longer fetched.
//   - An incremental response carries only partitions with news; the others are implied
//     ("no data").
//   - A top-level error resets: FETCH_SESSION_ID_NOT_FOUND to (0, 0), any other to
//     (id, 0), which closes the old session and asks for a new one; a network error too.
//     A response naming partitions outside the session (or omitting some from a full
//     response) is dropped and resets the same way.
//   - Requests use topic ids (v13+) only when every partition has one; otherwise v12.
//
// Kafka's replica fetchers never close their session with the final epoch -1 (only
// consumers do, KafkaConsumer.close): a stopped fetcher's session stays on the leader
// until evicted, and so it does here.
//
// Not safe for concurrent use: its fetcher goroutine owns it.

import (
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

const (
	invalidFetchSessionID = 0
	initialFetchEpoch     = 0
	finalFetchEpoch       = -1
)

// fetchMetadata is Kafka's FetchMetadata: the session id and epoch of the next request.
type fetchMetadata struct {
	sessionID int32
	epoch     int32
}

func (m fetchMetadata) isFull() bool {
	return m.epoch == initialFetchEpoch || m.epoch == finalFetchEpoch
}

func (m fetchMetadata) nextCloseExistingAttemptNew() fetchMetadata {
	return fetchMetadata{m.sessionID, initialFetchEpoch}
}

func (m fetchMetadata) nextIncremental() fetchMetadata {
	return fetchMetadata{m.sessionID, nextFetchSessionEpoch(m.epoch)}
}

func newIncrementalFetchMetadata(id int32) fetchMetadata {
	return fetchMetadata{id, nextFetchSessionEpoch(initialFetchEpoch)}
}

func (m fetchMetadata) String() string {
	id, epoch := fmt.Sprint(m.sessionID), fmt.Sprint(m.epoch)
	if m.sessionID == invalidFetchSessionID {
		id = "INVALID"
	}
	switch m.epoch {
	case initialFetchEpoch:
		epoch = "INITIAL"
	case finalFetchEpoch:
		epoch = "FINAL"
	}
	return "(sessionId=" + id + ", epoch=" + epoch + ")"
}

// fetchPartitionData is FetchRequest.PartitionData: what one partition's fetch asks.
type fetchPartitionData struct {
	topicID            [16]byte
	fetchOffset        int64
	logStartOffset     int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
}

type fetchSessionPartition struct {
	tp   logstore.TopicPartition
	data fetchPartitionData
}

// fetchRequestData is FetchSessionHandler.FetchRequestData: one request to send.
type fetchRequestData struct {
	toSend         []fetchSessionPartition // in request order
	toForget       []fetchSessionPartition // removed (data.topicID: the id they had)
	toReplace      []fetchSessionPartition // same name, new topic id: forgotten by old id at v13+
	session        map[logstore.TopicPartition]fetchPartitionData
	metadata       fetchMetadata
	canUseTopicIDs bool
}

// fetchSessionHandler is one fetcher's session with its leader.
type fetchSessionHandler struct {
	node int32
	log  *logrus.Entry
	next fetchMetadata

	// The session's partitions, in insertion order (Kafka's LinkedHashMap).
	order    []logstore.TopicPartition
	session  map[logstore.TopicPartition]fetchPartitionData
	topicIDs map[[16]byte]string // sessionTopicNames
}

func newFetchSessionHandler(node int32, log *logrus.Entry) *fetchSessionHandler {
	return &fetchSessionHandler{node: node, log: log, session: map[logstore.TopicPartition]fetchPartitionData{},
		topicIDs: map[[16]byte]string{}}
}

// debug reports whether Debug lines are written: the per-request ones are built only then.
func (h *fetchSessionHandler) debug() bool { return h.log.Logger.IsLevelEnabled(logrus.DebugLevel) }

// sessionID is the id of the current session (0: none).
func (h *fetchSessionHandler) sessionID() int32 { return h.next.sessionID }

// fetchRequestBuilder collects the partitions wanted in the next request.
type fetchRequestBuilder struct {
	h          *fetchSessionHandler
	next       []fetchSessionPartition
	idx        map[logstore.TopicPartition]int
	topicNames map[[16]byte]string
	withoutIDs int
}

func (h *fetchSessionHandler) newBuilder() *fetchRequestBuilder {
	return &fetchRequestBuilder{h: h, idx: map[logstore.TopicPartition]int{}, topicNames: map[[16]byte]string{}}
}

// add wants tp fetched with data in the upcoming request.
func (b *fetchRequestBuilder) add(tp logstore.TopicPartition, data fetchPartitionData) {
	if i, ok := b.idx[tp]; ok {
		b.next[i].data = data
		return
	}
	b.idx[tp] = len(b.next)
	b.next = append(b.next, fetchSessionPartition{tp, data})
	if data.topicID == ([16]byte{}) {
		b.withoutIDs++
	} else if _, ok := b.topicNames[data.topicID]; !ok {
		b.topicNames[data.topicID] = tp.Topic
	}
}

// build is Builder.build: a full request with every partition, or an incremental one with
// the partitions added or changed since the session's last request (added ones first,
// then changed ones in session order, as Kafka), forgetting the others.
func (b *fetchRequestBuilder) build() fetchRequestData {
	h := b.h
	canUseTopicIDs := b.withoutIDs == 0
	setTopicIDs := func() {
		if canUseTopicIDs {
			h.topicIDs = b.topicNames
		} else {
			h.topicIDs = map[[16]byte]string{}
		}
	}
	if h.next.isFull() {
		h.order = h.order[:0]
		h.session = make(map[logstore.TopicPartition]fetchPartitionData, len(b.next))
		for _, p := range b.next {
			h.order = append(h.order, p.tp)
			h.session[p.tp] = p.data
		}
		setTopicIDs()
		if h.debug() {
			h.log.WithFields(logrus.Fields{"session": h.next, "partitions": len(b.next)}).Debug("built full fetch")
		}
		return fetchRequestData{toSend: b.next, session: h.session, metadata: h.next, canUseTopicIDs: canUseTopicIDs}
	}

	var removed, altered, replaced []fetchSessionPartition
	seen := make([]bool, len(b.next)) // next entries already in the session
	// h.order is filtered in place: writes never pass the read position.
	order := h.order[:0]
	for _, tp := range h.order {
		prev := h.session[tp]
		i, ok := b.idx[tp]
		if !ok {
			delete(h.session, tp)
			removed = append(removed, fetchSessionPartition{tp, prev})
			if canUseTopicIDs && prev.topicID == ([16]byte{}) {
				canUseTopicIDs = false
			}
			continue
		}
		order = append(order, tp)
		seen[i] = true
		next := b.next[i].data
		switch {
		case prev.topicID != next.topicID && prev.topicID != [16]byte{} && next.topicID != [16]byte{}:
			h.session[tp] = next
			replaced = append(replaced, fetchSessionPartition{tp, prev})
			altered = append(altered, fetchSessionPartition{tp, next})
		case prev != next:
			h.session[tp] = next
			altered = append(altered, fetchSessionPartition{tp, next})
		}
	}
	var added []fetchSessionPartition
	for i, p := range b.next {
		if seen[i] {
			continue
		}
		order = append(order, p.tp)
		h.session[p.tp] = p.data
		added = append(added, p)
	}
	h.order = order
	setTopicIDs()
	if h.debug() {
		h.log.WithFields(logrus.Fields{"session": h.next, "added": len(added), "altered": len(altered), "removed": len(removed),
			"replaced": len(replaced), "partitions": len(h.order)}).Debug("built incremental fetch")
	}
	// Kafka sends the added partitions first, then the altered ones re-added at the end of
	// its "next" map; the order matters only for response space, which the leader's
	// session order decides for an incremental fetch.
	return fetchRequestData{toSend: append(added, altered...), toForget: removed, toReplace: replaced, session: h.session,
		metadata: h.next, canUseTopicIDs: canUseTopicIDs}
}

// request turns d into a Fetch request at the given version (needed for the forgotten
// topics: by id from v13, replaced partitions only then).
func (d *fetchRequestData) request(req *kmsg.FetchRequest, version int16) {
	req.SessionID, req.SessionEpoch = d.metadata.sessionID, d.metadata.epoch
	req.Topics = req.Topics[:0]
	for _, p := range d.toSend {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.tp.Topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.tp.Topic, p.data.topicID
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.CurrentLeaderEpoch = p.data.currentLeaderEpoch
		rp.FetchOffset = p.data.fetchOffset
		rp.LastFetchedEpoch = p.data.lastFetchedEpoch
		rp.LogStartOffset = p.data.logStartOffset
		rp.PartitionMaxBytes = p.data.maxBytes
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	req.ForgottenTopics = req.ForgottenTopics[:0]
	byTopic := map[string]int{}
	forget := func(ps []fetchSessionPartition) {
		for _, p := range ps {
			i, ok := byTopic[p.tp.Topic]
			if !ok {
				i = len(req.ForgottenTopics)
				byTopic[p.tp.Topic] = i
				ft := kmsg.NewFetchRequestForgottenTopic()
				ft.Topic, ft.TopicID = p.tp.Topic, p.data.topicID
				req.ForgottenTopics = append(req.ForgottenTopics, ft)
			}
			req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, p.tp.Partition)
		}
	}
	forget(d.toForget)
	// Before v13 partitions are named, so forgetting a replaced one would forget the new one.
	if version >= 13 {
		forget(d.toReplace)
	}
}

// topicName names a response topic: by id from v13 (through the session's ids), else
// its name; ok false for an id the session does not know.
func (h *fetchSessionHandler) topicName(t *kmsg.FetchResponseTopic, version int16) (string, bool) {
	if version < 13 {
		return t.Topic, true
	}
	name, ok := h.topicIDs[t.TopicID]
	return name, ok
}

// handleResponse is FetchSessionHandler.handleResponse: it moves the session on and
// reports whether the response's partitions may be processed.
func (h *fetchSessionHandler) handleResponse(resp *kmsg.FetchResponse, version int16) bool {
	log := func() *logrus.Entry { return h.log.WithFields(logrus.Fields{"node": h.node, "session": h.next}) }
	if resp.ErrorCode != 0 {
		log().WithField("error", kerr.ErrorForCode(resp.ErrorCode)).Info("leader was unable to process the fetch request")
		if resp.ErrorCode == kerr.FetchSessionIDNotFound.Code {
			h.next = fetchMetadata{invalidFetchSessionID, initialFetchEpoch}
		} else {
			h.next = h.next.nextCloseExistingAttemptNew()
		}
		return false
	}
	// Partitions outside the session (or of a topic id it does not know) make the response
	// unusable; so do session partitions omitted from a full response.
	inSession, extra := 0, 0
	for i := range resp.Topics {
		t := &resp.Topics[i]
		name, ok := h.topicName(t, version)
		if !ok {
			extra++
			continue
		}
		for _, p := range t.Partitions {
			if _, ok := h.session[logstore.TopicPartition{Topic: name, Partition: p.Partition}]; ok {
				inSession++
			} else {
				extra++
			}
		}
	}
	if h.next.isFull() {
		if len(resp.Topics) == 0 && resp.ThrottleMillis > 0 {
			// KIP-219: an empty full response throttles the client; not an error.
			log().WithField("throttle_ms", resp.ThrottleMillis).Debug("empty full fetch response: throttled")
			h.next = fetchMetadata{invalidFetchSessionID, initialFetchEpoch}
			return false
		}
		if omitted := len(h.session) - inSession; extra > 0 || omitted > 0 {
			log().WithFields(logrus.Fields{"extra": extra, "omitted": omitted}).Info("leader sent an invalid full fetch response")
			h.next = fetchMetadata{invalidFetchSessionID, initialFetchEpoch}
			return false
		}
		if resp.SessionID == invalidFetchSessionID {
			if h.debug() {
				log().Debug("full fetch response without a session")
			}
			h.next = fetchMetadata{invalidFetchSessionID, initialFetchEpoch}
			return true
		}
		if h.debug() {
			log().WithField("new_session_id", resp.SessionID).Debug("full fetch response created a fetch session")
		}
		h.next = newIncrementalFetchMetadata(resp.SessionID)
		return true
	}
	if extra > 0 {
		log().WithField("extra", extra).Info("leader sent an invalid incremental fetch response")
		h.next = h.next.nextCloseExistingAttemptNew()
		return false
	}
	if resp.SessionID == invalidFetchSessionID {
		if h.debug() {
			log().Debug("incremental fetch response closed the session")
		}
		h.next = fetchMetadata{invalidFetchSessionID, initialFetchEpoch}
		return true
	}
	h.next = h.next.nextIncremental()
	return true
}

// handleError is FetchSessionHandler.handleError: after a failed send the next request
// closes the session and asks for a new one.
func (h *fetchSessionHandler) handleError(err error) {
	h.log.WithFields(logrus.Fields{"node": h.node, "session": h.next}).WithError(err).Debug("error sending fetch request")
	h.next = h.next.nextCloseExistingAttemptNew()
}
