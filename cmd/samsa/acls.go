package main

// acls mirrors Kafka 3.7's kafka-acls.sh (kafka.admin.AclCommand, its AdminClientService):
// the same flags, checks and output, through the brokers' CreateAcls, DeleteAcls and
// DescribeAcls APIs.
//
// Deviations: Kafka prints resources and entries in hash-set order; samsa sorts them (by
// resource type, name and pattern type; by principal, host, operation and permission). The
// deprecated --authorizer, --authorizer-properties and --zk-tls-config-file (ACLs written to
// ZooKeeper by the tool itself) are refused: samsa acls needs --bootstrap-server. Errors print
// their message without a Java stack trace.

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclPattern is Kafka's ResourcePattern, and with a non-specific pattern type or a nil name
// its ResourcePatternFilter.
type aclPattern struct {
	typ     kmsg.ACLResourceType
	name    *string // nil: any name (filters only)
	pattern kmsg.ACLResourcePatternType
}

// String is ResourcePattern.toString (a filter prints the same way, with <any> for no name).
func (p aclPattern) String() string {
	name := "<any>"
	if p.name != nil {
		name = *p.name
	}
	return "ResourcePattern(resourceType=" + p.typ.String() + ", name=" + name + ", patternType=" + p.pattern.String() + ")"
}

func (p aclPattern) key() string { return fmt.Sprintf("%d\x00%s\x00%d", p.typ, p.nameOr(), p.pattern) }

func (p aclPattern) nameOr() string {
	if p.name == nil {
		return ""
	}
	return *p.name
}

// aclEntry is Kafka's AccessControlEntry.
type aclEntry struct {
	principal, host string
	op              kmsg.ACLOperation
	perm            kmsg.ACLPermissionType
}

// String is AccessControlEntryData.toString.
func (e aclEntry) String() string {
	return "(principal=" + e.principal + ", host=" + e.host + ", operation=" + e.op.String() + ", permissionType=" + e.perm.String() + ")"
}

func sortEntries(es []aclEntry) {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.principal != b.principal {
			return a.principal < b.principal
		}
		if a.host != b.host {
			return a.host < b.host
		}
		if a.op != b.op {
			return a.op < b.op
		}
		return a.perm < b.perm
	})
}

// aclTarget is one resource pattern (or filter) with the entries the command line gives it.
type aclTarget struct {
	pattern aclPattern
	entries []aclEntry
}

type aclsOpts struct {
	bootstrap                 string
	commandConfig             optString
	add, remove, list         bool
	force                     bool
	patternType               kmsg.ACLResourcePatternType
	topics, groups, txnIDs    multiFlag
	tokens, userPrincipals    multiFlag
	cluster                   bool
	producer, consumer        bool
	idempotent                bool
	operations                multiFlag
	allowPrincipals           multiFlag
	denyPrincipals            multiFlag
	allowHosts, denyHosts     multiFlag
	listPrincipals            multiFlag
	listPrincipalsGiven       bool
	authorizer, authorizerZKT optString
	authorizerProps           multiFlag
}

// aclCommandErr marks what AclCommand raises inside its try block: printed on stdout as
// "Error while executing ACL command: ...", exit 1.
type aclCommandErr struct{ msg string }

func (e *aclCommandErr) Error() string { return e.msg }

func parseAclsArgs(args []string, stderr io.Writer) (*aclsOpts, *flag.FlagSet, error) {
	fs := newFlagSet("samsa acls", stderr)
	o := &aclsOpts{}
	var bootstrap, patternType optString
	fs.Var(&bootstrap, "bootstrap-server", "A list of host/port pairs to use for establishing the connection to the Kafka cluster. This list should be in the form host1:port1,host2:port2,... This config is required for acl management using admin client API.")
	fs.Var(&o.commandConfig, "command-config", "A property file containing configs to be passed to Admin Client.")
	fs.Var(&o.authorizer, "authorizer", "DEPRECATED in Kafka, not supported by samsa: use --bootstrap-server.")
	fs.Var(&o.authorizerProps, "authorizer-properties", "DEPRECATED in Kafka, not supported by samsa: use --bootstrap-server.")
	fs.Var(&o.authorizerZKT, "zk-tls-config-file", "DEPRECATED in Kafka, not supported by samsa: use --bootstrap-server.")
	fs.Var(&o.topics, "topic", "topic to which ACLs should be added or removed. A value of '*' indicates ACL should apply to all topics.")
	fs.BoolVar(&o.cluster, "cluster", false, "Add/Remove cluster ACLs.")
	fs.Var(&o.groups, "group", "Consumer Group to which the ACLs should be added or removed. A value of '*' indicates the ACLs should apply to all groups.")
	fs.Var(&o.txnIDs, "transactional-id", "The transactionalId to which ACLs should be added or removed. A value of '*' indicates the ACLs should apply to all transactionalIds.")
	fs.BoolVar(&o.idempotent, "idempotent", false, "Enable idempotence for the producer. This should be used in combination with the --producer option. Note that idempotence is enabled automatically if the producer is authorized to a particular transactional-id.")
	fs.Var(&o.tokens, "delegation-token", "Delegation token to which ACLs should be added or removed. A value of '*' indicates ACL should apply to all tokens.")
	fs.Var(&patternType, "resource-pattern-type", "The type of the resource pattern or pattern filter. When adding acls, this should be a specific pattern type, e.g. 'literal' or 'prefixed'. When listing or removing acls, a specific pattern type can be used to list or remove acls from specific resource patterns, or use the filter values of 'any' or 'match', where 'any' will match any pattern type, but will match the resource name exactly, where as 'match' will perform pattern matching to list or remove all acls that affect the supplied resource(s). WARNING: 'match', when used in combination with the '--remove' switch, should be used with care. (default: LITERAL)")
	fs.BoolVar(&o.add, "add", false, "Indicates you are trying to add ACLs.")
	fs.BoolVar(&o.remove, "remove", false, "Indicates you are trying to remove ACLs.")
	fs.BoolVar(&o.list, "list", false, "List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster to specify a resource.")
	fs.Var(&o.operations, "operation", "Operation that is being allowed or denied. Valid operation names are: "+strings.Join(aclOperationNames(), ", ")+" (default: All)")
	fs.Var(&o.allowPrincipals, "allow-principal", "principal is in principalType:name format. Note that principalType must be supported by the Authorizer being used. For example, User:'*' is the wild card indicating all users.")
	fs.Var(&o.denyPrincipals, "deny-principal", "principal is in principalType:name format. By default anyone not added through --allow-principal is denied access. You only need to use this option as negation to already allowed set. AND PLEASE REMEMBER DENY RULES TAKES PRECEDENCE OVER ALLOW RULES.")
	fs.Var(&o.listPrincipals, "principal", "List ACLs for the specified principal. principal is in principalType:name format. Multiple --principal option can be passed.")
	fs.Var(&o.allowHosts, "allow-host", "Host from which principals listed in --allow-principal will have access. If you have specified --allow-principal then the default for this option will be set to '*' which allows access from all hosts.")
	fs.Var(&o.denyHosts, "deny-host", "Host from which principals listed in --deny-principal will be denied access. If you have specified --deny-principal then the default for this option will be set to '*' which denies access from all hosts.")
	fs.BoolVar(&o.producer, "producer", false, "Convenience option to add/remove ACLs for producer role. This will generate ACLs that allows WRITE,DESCRIBE and CREATE on topic.")
	fs.BoolVar(&o.consumer, "consumer", false, "Convenience option to add/remove ACLs for consumer role. This will generate ACLs that allows READ,DESCRIBE on topic and READ on group.")
	fs.BoolVar(&o.force, "force", false, "Assume Yes to all queries and do not prompt.")
	fs.Var(&o.userPrincipals, "user-principal", "Specifies a user principal as a resource in relation with the operation. For instance one could grant CreateTokens or DescribeTokens permission on a given user principal.")
	// --principal and --command-config take an optional argument (joptsimple withOptionalArg).
	args = optionalArg(optionalArg(args, "principal"), "command-config")
	for _, a := range args {
		if a == "-principal" || a == "--principal" || strings.HasPrefix(a, "-principal=") || strings.HasPrefix(a, "--principal=") {
			o.listPrincipalsGiven = true
		}
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	o.bootstrap = bootstrap.v
	var lp multiFlag // a bare --principal has no value: no principal to filter by
	for _, p := range o.listPrincipals {
		if p != "" {
			lp = append(lp, p)
		}
	}
	o.listPrincipals = lp
	o.patternType = kmsg.ACLResourcePatternTypeLiteral
	if patternType.set {
		pt, err := kmsg.ParseACLResourcePatternType(patternType.v)
		if err != nil || pt == kmsg.ACLResourcePatternTypeUnknown || !strings.EqualFold(strings.TrimSpace(patternType.v), pt.String()) {
			return nil, fs, usageErr("Cannot parse argument '%s' of option resource-pattern-type", patternType.v)
		}
		o.patternType = pt
	}
	return o, fs, o.check(bootstrap.set)
}

// check is AclCommandOptions.checkArgs.
func (o *aclsOpts) check(hasBootstrap bool) error {
	if hasBootstrap && o.authorizer.set {
		return usageErr("Only one of --bootstrap-server or --authorizer must be specified")
	}
	if !hasBootstrap {
		return usageErr("Missing required argument \"[bootstrap-server]\": samsa acls manages ACLs through the brokers only (--authorizer, --authorizer-properties and --zk-tls-config-file are not supported)")
	}
	if len(o.authorizerProps) > 0 {
		return usageErr("The --authorizer-properties option can only be used with --authorizer option")
	}
	if o.authorizerZKT.set {
		return usageErr("The --zk-tls-config-file option can only be used with --authorizer option")
	}
	if countSet(o.add, o.remove, o.list) != 1 {
		return usageErr("Command must include exactly one action: --list, --add, --remove. ")
	}
	invalid := func(used string, usedSet bool, others ...struct {
		name string
		set  bool
	}) error {
		if !usedSet {
			return nil
		}
		for _, x := range others {
			if x.set {
				return usageErr("Option \"[%s]\" can't be used with option \"[%s]\"", used, x.name)
			}
		}
		return nil
	}
	type opt = struct {
		name string
		set  bool
	}
	if err := invalid("list", o.list, opt{"producer", o.producer}, opt{"consumer", o.consumer}, opt{"allow-host", len(o.allowHosts) > 0},
		opt{"allow-principal", len(o.allowPrincipals) > 0}, opt{"deny-host", len(o.denyHosts) > 0}, opt{"deny-principal", len(o.denyPrincipals) > 0}); err != nil {
		return err
	}
	for _, role := range []struct {
		name string
		set  bool
	}{{"producer", o.producer}, {"consumer", o.consumer}} {
		if err := invalid(role.name, role.set, opt{"operation", len(o.operations) > 0}, opt{"deny-principal", len(o.denyPrincipals) > 0}, opt{"deny-host", len(o.denyHosts) > 0}); err != nil {
			return err
		}
	}
	if o.listPrincipalsGiven && !o.list {
		return usageErr("The --principal option is only available if --list is set")
	}
	if o.producer && len(o.topics) == 0 {
		return usageErr("With --producer you must specify a --topic")
	}
	if o.idempotent && !o.producer {
		return usageErr("The --idempotent option is only available if --producer is set")
	}
	if o.consumer && (len(o.topics) == 0 || len(o.groups) == 0 || (!o.producer && (o.cluster || len(o.txnIDs) > 0))) {
		return usageErr("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.")
	}
	return nil
}

// aclOperationNames are the operation names --operation takes (AclEntry.AclOperations).
func aclOperationNames() []string {
	var out []string
	for op := kmsg.ACLOperationAll; op <= kmsg.ACLOperationDescribeTokens; op++ {
		out = append(out, pascalCase(op.String()))
	}
	return out
}

// pascalCase is SecurityUtils.toPascalCase: IDEMPOTENT_WRITE → IdempotentWrite.
func pascalCase(s string) string {
	var b strings.Builder
	upper := true
	for _, c := range s {
		switch {
		case c == '_':
			upper = true
		case upper:
			b.WriteString(strings.ToUpper(string(c)))
			upper = false
		default:
			b.WriteString(strings.ToLower(string(c)))
		}
	}
	return b.String()
}

// parseACLOperation is SecurityUtils.operation: the Pascal-case name, or it upper-cased
// (IdempotentWrite, IDEMPOTENTWRITE); anything else is UNKNOWN.
func parseACLOperation(s string) kmsg.ACLOperation {
	for op := kmsg.ACLOperationAny; op <= kmsg.ACLOperationDescribeTokens; op++ {
		n := pascalCase(op.String())
		if s == n || strings.ToUpper(s) == strings.ToUpper(n) {
			return op
		}
	}
	return kmsg.ACLOperationUnknown
}

// parseKafkaPrincipal is SecurityUtils.parseKafkaPrincipal: "Type:Name", split at the first
// colon; the name may be empty.
func parseKafkaPrincipal(s string) (string, error) {
	if _, _, ok := strings.Cut(s, ":"); !ok || s == "" {
		return "", &aclCommandErr{"expected a string in format principalType:principalName but got " + s}
	}
	return s, nil
}

// aclSupportedOperations is AclEntry.supportedOperations plus ALL, as validateOperation
// accepts them.
func aclSupportedOperations(rt kmsg.ACLResourceType) []kmsg.ACLOperation {
	var ops []kmsg.ACLOperation
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		ops = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
			kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	case kmsg.ACLResourceTypeGroup:
		ops = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete}
	case kmsg.ACLResourceTypeCluster:
		ops = []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
			kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}
	case kmsg.ACLResourceTypeTransactionalId:
		ops = []kmsg.ACLOperation{kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite}
	case kmsg.ACLResourceTypeDelegationToken:
		ops = []kmsg.ACLOperation{kmsg.ACLOperationDescribe}
	case kmsg.ACLResourceTypeUser:
		ops = []kmsg.ACLOperation{kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens}
	}
	return append(ops, kmsg.ACLOperationAll)
}

// clusterPattern is AclCommand.ClusterResourceFilter.
func clusterPattern() aclPattern {
	name := "kafka-cluster"
	return aclPattern{kmsg.ACLResourceTypeCluster, &name, kmsg.ACLResourcePatternTypeLiteral}
}

// resourceFilters is AclCommand.getResourceFilter: the resources named on the command line,
// in the order Kafka adds them, without duplicates.
func (o *aclsOpts) resourceFilters(dieIfNone bool) ([]aclPattern, error) {
	var out []aclPattern
	seen := map[string]bool{}
	add := func(p aclPattern) {
		if !seen[p.key()] {
			seen[p.key()] = true
			out = append(out, p)
		}
	}
	named := func(rt kmsg.ACLResourceType, names []string, trim bool) {
		for _, n := range names {
			if trim {
				n = strings.TrimSpace(n)
			}
			add(aclPattern{rt, &n, o.patternType})
		}
	}
	named(kmsg.ACLResourceTypeTopic, o.topics, true)
	if o.patternType == kmsg.ACLResourcePatternTypeLiteral && (o.cluster || o.idempotent) {
		add(clusterPattern())
	}
	named(kmsg.ACLResourceTypeGroup, o.groups, true)
	named(kmsg.ACLResourceTypeTransactionalId, o.txnIDs, false)
	named(kmsg.ACLResourceTypeDelegationToken, o.tokens, true)
	named(kmsg.ACLResourceTypeUser, o.userPrincipals, true)
	if len(out) == 0 && dieIfNone {
		return nil, usageErr("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>")
	}
	return out, nil
}

func trimmedSet(vs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range vs {
		v = strings.TrimSpace(v)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// principals is AclCommand.getPrincipals.
func principals(vs []string) ([]string, error) {
	var out []string
	for _, v := range trimmedSet(vs) {
		p, err := parseKafkaPrincipal(v)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// hosts is AclCommand.getHosts: the hosts given, else * when principals were given.
func hosts(given, principals []string) []string {
	if len(given) > 0 {
		return trimmedSet(given)
	}
	if len(principals) > 0 {
		return []string{"*"}
	}
	return nil
}

// entries is AclCommand.getAcl(opts, operations): allow entries for every allowed principal ×
// operation × host, deny entries likewise.
func (o *aclsOpts) entries(ops []kmsg.ACLOperation) ([]aclEntry, error) {
	allowP, err := principals(o.allowPrincipals)
	if err != nil {
		return nil, err
	}
	denyP, err := principals(o.denyPrincipals)
	if err != nil {
		return nil, err
	}
	var out []aclEntry
	seen := map[aclEntry]bool{}
	cross := func(ps, hs []string, perm kmsg.ACLPermissionType) {
		for _, p := range ps {
			for _, op := range ops {
				for _, h := range hs {
					e := aclEntry{p, h, op, perm}
					if !seen[e] {
						seen[e] = true
						out = append(out, e)
					}
				}
			}
		}
	}
	if ah := hosts(o.allowHosts, o.allowPrincipals); len(ah) > 0 && len(allowP) > 0 {
		cross(allowP, ah, kmsg.ACLPermissionTypeAllow)
	}
	if dh := hosts(o.denyHosts, o.denyPrincipals); len(dh) > 0 && len(denyP) > 0 {
		cross(denyP, dh, kmsg.ACLPermissionTypeDeny)
	}
	sortEntries(out)
	return out, nil
}

// targets is AclCommand.getResourceFilterToAcls: the entries each resource filter gets from
// the command line, or from the --producer / --consumer roles.
func (o *aclsOpts) targets() ([]aclTarget, error) {
	var out []aclTarget
	index := map[string]int{}
	put := func(p aclPattern, es []aclEntry, merge bool) {
		if i, ok := index[p.key()]; ok {
			if merge {
				es = mergeEntries(out[i].entries, es)
			}
			out[i].entries = es
			return
		}
		index[p.key()] = len(out)
		out = append(out, aclTarget{p, es})
	}
	filters, err := o.resourceFilters(true)
	if err != nil {
		return nil, err
	}
	if !o.producer && !o.consumer {
		var ops []kmsg.ACLOperation
		names := []string(o.operations)
		if len(names) == 0 {
			names = []string{"All"}
		}
		for _, n := range names {
			op := parseACLOperation(strings.TrimSpace(n))
			if !containsOp(ops, op) {
				ops = append(ops, op)
			}
		}
		es, err := o.entries(ops)
		if err != nil {
			return nil, err
		}
		for _, f := range filters {
			put(f, es, false)
		}
	}
	if o.producer {
		topicEs, err := o.entries([]kmsg.ACLOperation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationCreate})
		if err != nil {
			return nil, err
		}
		txnEs, err := o.entries([]kmsg.ACLOperation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe})
		if err != nil {
			return nil, err
		}
		for _, f := range filters {
			switch f.typ {
			case kmsg.ACLResourceTypeTopic:
				put(f, topicEs, false)
			case kmsg.ACLResourceTypeTransactionalId:
				put(f, txnEs, false)
			}
		}
		if o.idempotent {
			es, err := o.entries([]kmsg.ACLOperation{kmsg.ACLOperationIdempotentWrite})
			if err != nil {
				return nil, err
			}
			put(clusterPattern(), es, false)
		}
	}
	if o.consumer {
		topicEs, err := o.entries([]kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe})
		if err != nil {
			return nil, err
		}
		groupEs, err := o.entries([]kmsg.ACLOperation{kmsg.ACLOperationRead})
		if err != nil {
			return nil, err
		}
		for _, f := range filters {
			switch f.typ {
			case kmsg.ACLResourceTypeTopic:
				put(f, topicEs, true)
			case kmsg.ACLResourceTypeGroup:
				put(f, groupEs, true)
			}
		}
	}
	// validateOperation.
	for _, t := range out {
		valid := aclSupportedOperations(t.pattern.typ)
		for _, e := range t.entries {
			if !containsOp(valid, e.op) {
				names := make([]string, len(valid))
				for i, op := range valid {
					names[i] = pascalCase(op.String())
				}
				return nil, usageErr("ResourceType %s only supports operations %s", t.pattern.typ, strings.Join(names, ", "))
			}
		}
	}
	return out, nil
}

func containsOp(ops []kmsg.ACLOperation, op kmsg.ACLOperation) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

func mergeEntries(a, b []aclEntry) []aclEntry {
	seen := map[aclEntry]bool{}
	var out []aclEntry
	for _, e := range append(append([]aclEntry(nil), a...), b...) {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out
}

// addTargets is AclCommand.getResourceToAcls: --add needs a specific pattern type and
// principals for every resource.
func (o *aclsOpts) addTargets() ([]aclTarget, error) {
	if o.patternType != kmsg.ACLResourcePatternTypeLiteral && o.patternType != kmsg.ACLResourcePatternTypePrefixed {
		return nil, usageErr("A '--resource-pattern-type' value of '%s' is not valid when adding acls.", o.patternType)
	}
	ts, err := o.targets()
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if len(t.entries) == 0 {
			return nil, usageErr("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
		}
	}
	return ts, nil
}

func indentEntries(es []aclEntry) string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "\t" + e.String()
	}
	return strings.Join(lines, "\n")
}
