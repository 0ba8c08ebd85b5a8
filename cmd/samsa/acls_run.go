package main

// acls_run.go is kafka-acls.sh's conversation with the brokers: CreateAcls, DeleteAcls and
// DescribeAcls for the targets acls.go parsed, printed as AclCommand prints them.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runAcls is kafka-acls.sh.
func runAcls(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseAclsArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	// Everything that can fail on the command line fails before connecting.
	var targets []aclTarget
	switch {
	case o.add:
		targets, err = o.addTargets()
	case o.remove:
		targets, err = o.targets()
	case o.list:
		_, err = principals(o.listPrincipals)
	}
	if err == nil {
		_, err = o.resourceFilters(false)
	}
	var ce *aclCommandErr
	if errors.As(err, &ce) {
		fmt.Fprintln(stdout, "Error while executing ACL command: "+ce.msg)
		return 1
	}
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	sec, ok := adminClientSecurity("acls", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	err = withAdminClient(o.bootstrap, "adminclient-1", 60*time.Second, sec, func(ctx context.Context, cl *kgo.Client) error {
		t := &aclsTool{cl: cl, o: o, out: stdout, in: bufio.NewReader(stdin)}
		switch {
		case o.add:
			return t.add(ctx, targets)
		case o.remove:
			return t.removeAll(ctx, targets)
		}
		return t.listAcls(ctx)
	})
	if err != nil {
		fmt.Fprintln(stdout, "Error while executing ACL command: "+err.Error())
		return 1
	}
	return 0
}

type aclsTool struct {
	cl  *kgo.Client
	o   *aclsOpts
	out io.Writer
	in  *bufio.Reader
}

// add is AdminClientService.addAcls: one CreateAcls per resource, then the listing.
func (t *aclsTool) add(ctx context.Context, targets []aclTarget) error {
	for _, tg := range targets {
		fmt.Fprintf(t.out, "Adding ACLs for resource `%s`: \n %s \n\n", tg.pattern, indentEntries(tg.entries))
		req := kmsg.NewPtrCreateACLsRequest()
		for _, e := range tg.entries {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = tg.pattern.typ, tg.pattern.nameOr(), tg.pattern.pattern
			c.Principal, c.Host, c.Operation, c.PermissionType = e.principal, e.host, e.op, e.perm
			req.Creations = append(req.Creations, c)
		}
		resp, err := req.RequestWith(ctx, t.cl)
		if err != nil {
			return err
		}
		for _, r := range resp.Results {
			if err := aclErr(r.ErrorCode, r.ErrorMessage); err != nil {
				return err
			}
		}
	}
	return t.listAcls(ctx)
}

// removeAll is AdminClientService.removeAcls: per resource filter, after confirmation, delete
// the entries given, or every entry when none was given; then the listing.
func (t *aclsTool) removeAll(ctx context.Context, targets []aclTarget) error {
	for _, tg := range targets {
		var msg string
		if len(tg.entries) == 0 {
			msg = fmt.Sprintf("Are you sure you want to delete all ACLs for resource filter `%s`? (y/n)", tg.pattern)
		} else {
			msg = fmt.Sprintf("Are you sure you want to remove ACLs: \n %s \n from resource filter `%s`? (y/n)", indentEntries(tg.entries), tg.pattern)
		}
		if !t.confirm(msg) {
			continue
		}
		req := kmsg.NewPtrDeleteACLsRequest()
		filter := func(e *aclEntry) kmsg.DeleteACLsRequestFilter {
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName, f.ResourcePatternType = tg.pattern.typ, tg.pattern.name, tg.pattern.pattern
			f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			if e != nil {
				p, h := e.principal, e.host
				f.Principal, f.Host, f.Operation, f.PermissionType = &p, &h, e.op, e.perm
			}
			return f
		}
		if len(tg.entries) == 0 {
			req.Filters = append(req.Filters, filter(nil))
		}
		for i := range tg.entries {
			req.Filters = append(req.Filters, filter(&tg.entries[i]))
		}
		resp, err := req.RequestWith(ctx, t.cl)
		if err != nil {
			return err
		}
		for _, r := range resp.Results {
			if err := aclErr(r.ErrorCode, r.ErrorMessage); err != nil {
				return err
			}
			for _, m := range r.MatchingACLs {
				if err := aclErr(m.ErrorCode, m.ErrorMessage); err != nil {
					return err
				}
			}
		}
	}
	return t.listAcls(ctx)
}

// confirm is AclCommand.confirmAction; end of input answers no.
func (t *aclsTool) confirm(msg string) bool {
	if t.o.force {
		return true
	}
	fmt.Fprintln(t.out, msg)
	line, _ := t.in.ReadString('\n')
	return strings.EqualFold(strings.TrimRight(line, "\r\n"), "y")
}

// listAcls is AdminClientService.listAcls: the ACLs of the resources given (all when none),
// optionally only those of the --principal values.
func (t *aclsTool) listAcls(ctx context.Context) error {
	filters, err := t.o.resourceFilters(false)
	if err != nil {
		return err
	}
	listP, err := principals(t.o.listPrincipals)
	if err != nil {
		return err
	}
	if len(filters) == 0 {
		filters = []aclPattern{{kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny}}
	}
	got := map[string]*aclTarget{}
	for _, f := range filters {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = f.typ, f.name, f.pattern
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, t.cl)
		if err != nil {
			return err
		}
		if err := aclErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
			return err
		}
		for _, r := range resp.Resources {
			name := r.ResourceName
			p := aclPattern{r.ResourceType, &name, r.ResourcePatternType}
			tg := got[p.key()]
			if tg == nil {
				tg = &aclTarget{pattern: p}
				got[p.key()] = tg
			}
			for _, a := range r.ACLs {
				tg.entries = append(tg.entries, aclEntry{a.Principal, a.Host, a.Operation, a.PermissionType})
			}
		}
	}
	resources := make([]*aclTarget, 0, len(got))
	for _, tg := range got {
		tg.entries = mergeEntries(tg.entries, nil)
		resources = append(resources, tg)
	}
	sort.Slice(resources, func(i, j int) bool {
		a, b := resources[i].pattern, resources[j].pattern
		if a.typ != b.typ {
			return a.typ < b.typ
		}
		if a.nameOr() != b.nameOr() {
			return a.nameOr() < b.nameOr()
		}
		return a.pattern < b.pattern
	})
	print := func(only string) {
		for _, tg := range resources {
			es := tg.entries
			if only != "" {
				es = nil
				for _, e := range tg.entries {
					if e.principal == only {
						es = append(es, e)
					}
				}
				if len(es) == 0 {
					continue
				}
			}
			fmt.Fprintf(t.out, "Current ACLs for resource `%s`: \n %s \n\n", tg.pattern, indentEntries(es))
		}
	}
	if len(listP) == 0 {
		print("")
		return nil
	}
	for _, p := range listP {
		fmt.Fprintf(t.out, "ACLs for principal `%s`\n", p)
		print(p)
	}
	return nil
}

// aclErr is the exception the Admin client's future fails with, as ExecutionException's
// message shows it: the Java class name and the broker's message (or Kafka's default one).
func aclErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	e := kerr.ErrorForCode(code)
	var ke *kerr.Error
	if !errors.As(e, &ke) {
		return fmt.Errorf("error code %d", code)
	}
	text := ke.Description
	if msg != nil && *msg != "" {
		text = *msg
	}
	return fmt.Errorf("org.apache.kafka.common.errors.%s: %s", javaExceptionName(ke), text)
}

// javaExceptionName is the ApiException subclass Kafka's Errors maps a code to: mostly the
// code's name in Pascal case with Exception, a few named otherwise.
func javaExceptionName(ke *kerr.Error) string {
	switch ke {
	case kerr.ClusterAuthorizationFailed:
		return "ClusterAuthorizationException"
	case kerr.TopicAuthorizationFailed:
		return "TopicAuthorizationException"
	case kerr.GroupAuthorizationFailed:
		return "GroupAuthorizationException"
	case kerr.TransactionalIDAuthorizationFailed:
		return "TransactionalIdAuthorizationException"
	case kerr.UnknownServerError:
		return "UnknownServerException"
	case kerr.SaslAuthenticationFailed:
		return "SaslAuthenticationException"
	case kerr.IllegalSaslState:
		return "IllegalSaslStateException"
	case kerr.UnsupportedSaslMechanism:
		return "UnsupportedSaslMechanismException"
	}
	return pascalCase(ke.Message) + "Exception"
}
