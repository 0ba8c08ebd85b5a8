package acl

// manage.go is AclAuthorizer's ACL management: createAcls, deleteAcls and acls, written to
// ZooKeeper with conditional updates and announced through change notifications.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// CreateAcls is AclAuthorizer.createAcls: invalid bindings (unknown elements, a "/" in the
// name, prefixed patterns below IBP 2.0-IV1) fail with INVALID_REQUEST; the rest are added
// per resource, each resource in one conditional write.
func (a *AclAuthorizer) CreateAcls(bindings []Binding) []error {
	results := make([]error, len(bindings))
	byResource := map[Resource][]int{}
	var order []Resource
	for i, b := range bindings {
		if err := a.validate(b); err != nil {
			results[i] = &Error{Code: kerr.InvalidRequest, Message: "Failed to create ACL", Err: err}
			continue
		}
		if _, ok := byResource[b.Resource]; !ok {
			order = append(order, b.Resource)
		}
		byResource[b.Resource] = append(byResource[b.Resource], i)
	}
	if len(order) == 0 {
		return results
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	for _, r := range order {
		idx := byResource[r]
		_, err := a.updateResourceACLs(r, func(cur []Entry) []Entry {
			next := append([]Entry(nil), cur...)
			for _, i := range idx {
				next = appendUnique(next, bindings[i].Entry)
			}
			return next
		})
		for _, i := range idx {
			if err != nil {
				results[i] = unknownServerError(err)
			}
		}
		if err != nil {
			a.log.WithError(err).WithField("resource", r.String()).Warn("failed to create ACLs")
		}
	}
	return results
}

func (a *AclAuthorizer) validate(b Binding) error {
	if !a.extended && b.Resource.Pattern == kmsg.ACLResourcePatternTypePrefixed {
		return fmt.Errorf("adding ACLs on prefixed resource patterns requires %s of 2.0-IV1 or greater", interBrokerProtocolProp)
	}
	if b.Resource.isUnknown() || b.Entry.isUnknown() ||
		b.Resource.Type == kmsg.ACLResourceTypeAny || b.Entry.Operation == kmsg.ACLOperationAny || b.Entry.Permission == kmsg.ACLPermissionTypeAny ||
		(b.Resource.Pattern != kmsg.ACLResourcePatternTypeLiteral && b.Resource.Pattern != kmsg.ACLResourcePatternTypePrefixed) {
		return errors.New("ACL binding contains unknown elements")
	}
	if strings.Contains(b.Resource.Name, "/") {
		return fmt.Errorf("ACL binding contains invalid resource name: %s", b.Resource.Name)
	}
	return nil
}

func unknownServerError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: kerr.UnknownServerError, Err: err}
}

// DeleteAcls is AclAuthorizer.deleteAcls: the resources are those cached plus those the
// filters name exactly; each ACL is credited to the first filter (in request order) that
// matches it. Filters with MATCH patterns see only ACLs this broker has already loaded.
func (a *AclAuthorizer) DeleteAcls(filters []BindingFilter) []DeleteResult {
	results := make([]DeleteResult, len(filters))
	a.writeMu.Lock()
	defer a.writeMu.Unlock()

	seen := map[Resource]bool{}
	var resources []Resource
	add := func(r Resource) {
		if !seen[r] {
			seen[r] = true
			resources = append(resources, r)
		}
	}
	a.mu.RLock()
	for r := range a.cache {
		add(r)
	}
	a.mu.RUnlock()
	for _, f := range filters {
		if !f.Resource.MatchesAtMostOne() {
			continue
		}
		switch f.Resource.Pattern {
		case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
			add(Resource{Type: f.Resource.Type, Name: *f.Resource.Name, Pattern: f.Resource.Pattern})
		case kmsg.ACLResourcePatternTypeAny:
			add(Resource{Type: f.Resource.Type, Name: *f.Resource.Name, Pattern: kmsg.ACLResourcePatternTypeLiteral})
			add(Resource{Type: f.Resource.Type, Name: *f.Resource.Name, Pattern: kmsg.ACLResourcePatternTypePrefixed})
		}
	}
	sortResources(resources)

	for _, r := range resources {
		var matching []int
		for i, f := range filters {
			if f.Resource.Matches(r) {
				matching = append(matching, i)
			}
		}
		if len(matching) == 0 {
			continue
		}
		type credit struct {
			entry  Entry
			filter int
		}
		var credited []credit // of the last attempt, which is the one written
		_, err := a.updateResourceACLs(r, func(cur []Entry) []Entry {
			credited = credited[:0]
			var keep []Entry
			for _, e := range cur {
				hit := -1
				for _, i := range matching {
					if filters[i].Entry.Matches(e) {
						hit = i
						break
					}
				}
				if hit < 0 {
					keep = append(keep, e)
				} else {
					credited = append(credited, credit{e, hit})
				}
			}
			return keep
		})
		if err != nil {
			a.log.WithError(err).WithField("resource", r.String()).Warn("failed to delete ACLs")
			err = unknownServerError(err)
		}
		for _, c := range credited {
			results[c.filter].Deleted = append(results[c.filter].Deleted, DeletedBinding{Binding: Binding{Resource: r, Entry: c.entry}, Err: err})
		}
	}
	return results
}

// Acls is AclAuthorizer.acls: the cached bindings matching filter, ordered by resource.
func (a *AclAuthorizer) Acls(filter BindingFilter) []Binding {
	a.mu.RLock()
	var out []Binding
	for r, v := range a.cache {
		for _, e := range v.entries {
			b := Binding{Resource: r, Entry: e}
			if filter.Matches(b) {
				out = append(out, b)
			}
		}
	}
	a.mu.RUnlock()
	sort.SliceStable(out, func(i, j int) bool { return resourceLess(out[i].Resource, out[j].Resource) })
	return out
}

func resourceLess(x, y Resource) bool {
	if x.Type != y.Type {
		return x.Type < y.Type
	}
	if x.Pattern != y.Pattern {
		return x.Pattern < y.Pattern
	}
	return x.Name < y.Name
}

func sortResources(rs []Resource) {
	sort.Slice(rs, func(i, j int) bool { return resourceLess(rs[i], rs[j]) })
}

// updateResourceACLs is AclAuthorizer.updateResourceAcls: apply change to the resource's
// current entries and write the result conditionally on the znode version (create when
// there is no znode, delete when nothing is left), re-reading and retrying on a conflict.
// On a real change the cache is updated and a change notification written. Callers hold
// writeMu. Reports whether the entries changed.
func (a *AclAuthorizer) updateResourceACLs(r Resource, change func([]Entry) []Entry) (bool, error) {
	path, err := ResourcePath(r)
	if err != nil {
		return false, err
	}
	a.mu.RLock()
	cur := a.cache[r]
	a.mu.RUnlock()
	if cur == nil {
		if cur, err = a.readZK(r); err != nil {
			return false, err
		}
	}
	for retries := 0; ; retries++ {
		next := change(cur.entries)
		var newVersion int32
		var werr error
		if len(next) > 0 {
			// Parse principals before writing, so an invalid one fails the request.
			if _, err := newVersioned(next, 0); err != nil {
				return false, err
			}
			if cur.exists() {
				var st zkmeta.Stat
				st, werr = a.zk.Set(path, EncodeACLs(next), cur.version)
				newVersion = st.Version
				if errors.Is(werr, zkmeta.ErrNoNode) {
					werr = zkmeta.ErrBadVersion
				}
			} else {
				_, werr = a.zk.Create(path, EncodeACLs(next), zkmeta.Persistent)
				if errors.Is(werr, zkmeta.ErrNodeExists) {
					werr = zkmeta.ErrBadVersion
				}
			}
		} else {
			werr = a.zk.Delete(path, cur.version)
			if errors.Is(werr, zkmeta.ErrNoNode) {
				werr = nil
			}
		}
		if werr == nil {
			nv, err := newVersioned(next, newVersion)
			if err != nil {
				return false, err
			}
			if len(next) == 0 {
				nv.version = unknownVersion
			}
			changed := !sameEntries(next, cur.entries)
			a.updateCache(r, nv)
			if changed {
				a.log.WithFields(logrus.Fields{"resource": r.String(), "zk_version": newVersion, "acls": len(next)}).Info("updated ACLs")
				if err := a.notifyChange(r); err != nil {
					return true, fmt.Errorf("write ACL change notification for %s: %w", r, err)
				}
			}
			return changed, nil
		}
		if !errors.Is(werr, zkmeta.ErrBadVersion) {
			return false, fmt.Errorf("update ACLs of %s: %w", r, werr)
		}
		if retries >= a.maxUpdateRetries {
			return false, fmt.Errorf("failed to update ACLs for %s after trying a maximum of %d times", r, a.maxUpdateRetries)
		}
		time.Sleep(retryBackoff + rand.N(retryBackoffJitter))
		if cur, err = a.readZK(r); err != nil {
			return false, err
		}
	}
}

// notifyChange is KafkaZkClient.createAclChangeNotification.
func (a *AclAuthorizer) notifyChange(r Resource) error {
	_, err := a.zk.Create(changePath(r.Pattern)+"/"+ChangeSequencePrefix, EncodeChange(r), zkmeta.PersistentSequential)
	return err
}
