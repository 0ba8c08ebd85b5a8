package acl

// notifications.go is AclAuthorizer's change listeners (ZkNodeChangeNotificationListener on
// /kafka-acl-changes and /kafka-acl-extended-changes): every broker reloads the resource a
// notification names, so ACL changes made through one broker reach all of them.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// listen is ZkNodeChangeNotificationListener for one change root: on every child change
// (and once at start) process the notifications newer than the last one processed, then
// purge those older than the expiry.
func (a *AclAuthorizer) listen(root string) {
	defer a.wg.Done()
	log := a.log.WithField("zk_path", root)
	for {
		children, ch, err := a.zk.ChildrenW(root)
		if err != nil {
			if errors.Is(err, zkmeta.ErrClosed) {
				return
			}
			log.WithError(err).Warn("cannot watch ACL change notifications; retrying")
			select {
			case <-a.quit:
				return
			case <-time.After(notificationRetryInterval):
			}
			continue
		}
		a.processNotifications(root, children, log)
		select {
		case <-a.quit:
			return
		case <-ch:
		}
	}
}

func (a *AclAuthorizer) processNotifications(root string, children []string, log *logrus.Entry) {
	if len(children) == 0 {
		return
	}
	sort.Strings(children)
	now := a.now()
	literal := root == LiteralChangesPath
	for _, child := range children {
		seq, err := strconv.ParseInt(strings.TrimPrefix(child, ChangeSequencePrefix), 10, 64)
		if err != nil {
			log.WithField("child", child).Warn("ignoring a child that is not an ACL change notification")
			continue
		}
		a.mu.RLock()
		last := a.lastSeq[root]
		a.mu.RUnlock()
		if seq <= last {
			continue
		}
		a.processNotification(root+"/"+child, literal, log)
		a.mu.Lock()
		a.lastSeq[root] = seq
		a.mu.Unlock()
	}
	for _, child := range children {
		path := root + "/" + child
		ok, st, err := a.zk.Exists(path)
		if err != nil || !ok {
			continue
		}
		if now.UnixMilli()-st.Ctime > a.changeExpiration.Milliseconds() {
			if err := a.zk.Delete(path, -1); err != nil && !errors.Is(err, zkmeta.ErrNoNode) {
				log.WithError(err).WithField("child", child).Warn("cannot purge ACL change notification")
			} else {
				log.WithField("child", child).Debug("purged ACL change notification")
			}
		}
	}
}

func (a *AclAuthorizer) processNotification(path string, literal bool, log *logrus.Entry) {
	data, _, err := a.zk.Get(path)
	if errors.Is(err, zkmeta.ErrNoNode) {
		log.WithField("child", path).Warn("ACL change notification vanished before it was read")
		return
	}
	if err != nil {
		log.WithError(err).WithField("child", path).Error("cannot read ACL change notification")
		return
	}
	r, err := DecodeChange(literal, data)
	if err == nil && (r.Type == kmsg.ACLResourceTypeUnknown || r.Type == kmsg.ACLResourceTypeAny ||
		(r.Pattern != kmsg.ACLResourcePatternTypeLiteral && r.Pattern != kmsg.ACLResourcePatternTypePrefixed)) {
		err = fmt.Errorf("unknown resource in %q", data)
	}
	if err != nil {
		log.WithError(err).WithField("child", path).Error("error processing ACL change notification")
		return
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	v, err := a.readZK(r)
	if err != nil {
		log.WithError(err).WithField("resource", r.String()).Error("cannot reload ACLs after a change notification")
		return
	}
	log.WithFields(logrus.Fields{"resource": r.String(), "acls": len(v.entries), "zk_version": v.version}).
		Info("processing ACL change notification")
	a.updateCache(r, v)
}
