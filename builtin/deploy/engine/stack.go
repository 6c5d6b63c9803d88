package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/stage"
)

var capabilities = []types.Capability{types.CapabilityCapabilityIam, types.CapabilityCapabilityNamedIam}

// userDataFile is the rendered userdata a stack's launch templates boot:
// names.UserDataFile for the built-in machine stacks, and
// userdata/<stack>.yaml for a plugin's own stack that takes UserDataKey.
func userDataFile(stack string) string {
	if f := names.UserDataFile(stack); f != "" {
		return f
	}
	return "userdata/" + stack + ".yaml"
}

// describe returns the stack, or nil when it does not exist.
func (e *Engine) describe(ctx context.Context, name string) (*types.Stack, error) {
	out, err := e.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		if notExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("describing stack %s: %w", name, err)
	}
	if len(out.Stacks) == 0 {
		return nil, nil
	}
	return &out.Stacks[0], nil
}

// survey lists the account's stacks once (a paginated DescribeStacks)
// instead of describing each rendered stack: fewer calls, less throttling
// on big clusters. It returns the live rendered stacks by rendered name, and
// the CloudFormation names of live stacks tagged with the cluster that are
// no longer rendered (a removed node pool).
func (e *Engine) survey(ctx context.Context, p *prepared) (map[string]*types.Stack, []string, error) {
	rendered := map[string]string{}
	for _, s := range p.graph.order {
		rendered[p.stackName(s)] = s
	}
	live := map[string]*types.Stack{}
	var orphans []string
	pg := cloudformation.NewDescribeStacksPaginator(e.cfn, &cloudformation.DescribeStacksInput{})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("listing the stacks of cluster %s: %w", p.cluster, err)
		}
		for i := range page.Stacks {
			st := &page.Stacks[i]
			if st.StackStatus == types.StackStatusDeleteComplete {
				continue
			}
			name := aws.ToString(st.StackName)
			if s, ok := rendered[name]; ok {
				live[s] = st
				continue
			}
			for _, t := range st.Tags {
				if aws.ToString(t.Key) == names.TagCluster && aws.ToString(t.Value) == p.cluster {
					orphans = append(orphans, name)
					break
				}
			}
		}
	}
	sort.Strings(orphans)
	return live, orphans, nil
}

func notExist(err error) bool {
	return apiCode(err) == "ValidationError" && strings.Contains(apiMessage(err), "does not exist")
}

func noChanges(msg string) bool {
	return strings.Contains(msg, "didn't contain changes") || strings.Contains(msg, "No updates are to be performed")
}

func outputsOf(s *types.Stack) map[string]string {
	m := map[string]string{}
	for _, o := range s.Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m
}

// stackInput is everything CloudFormation needs to create or update a stack.
type stackInput struct {
	name         string // CloudFormation name
	templateBody *string
	templateURL  *string
	params       []types.Parameter
	tags         []types.Tag
}

// templateURL is how CloudFormation reaches a template in S3. moto only
// understands this virtual-hosted form, which AWS accepts everywhere.
func templateURL(bucket, region, key string) string {
	return "https://" + names.S3Host(bucket, region) + "/" + key
}

// input builds the create/update input of a stack. outputs gives the outputs
// of finished stacks; known reports whether a stack's outputs are known at
// all (Diff of a cluster not yet created does not know them).
func (e *Engine) input(p *prepared, stack string, keys map[string]string, outputs func(string) (map[string]string, bool), update bool) (*stackInput, error) {
	spec := p.graph.specs[stack]
	tp := p.tmpl[stack]
	in := &stackInput{name: p.stackName(stack)}
	if spec.UploadByURL || len(tp.Body) > MaxInlineTemplate {
		in.templateURL = aws.String(templateURL(p.loc.Bucket, p.region, keys[spec.Template]))
	} else {
		in.templateBody = aws.String(string(tp.Body))
	}
	params := make([]string, 0, len(tp.Parameters))
	for n := range tp.Parameters {
		params = append(params, n)
	}
	sort.Strings(params)
	for _, n := range params {
		var v string
		switch src, ok := spec.ParameterSources[n]; {
		case ok:
			from, out := src.Stack, src.Output
			outs, known := outputs(from)
			if !known {
				if update {
					in.params = append(in.params, types.Parameter{ParameterKey: aws.String(n), UsePreviousValue: aws.Bool(true)})
				}
				continue
			}
			val, ok := outs[out]
			if !ok {
				have := make([]string, 0, len(outs))
				for k := range outs {
					have = append(have, k)
				}
				sort.Strings(have)
				return nil, fmt.Errorf("stack %s: parameter %s takes output %s of stack %s, which has no such output (it has: %s); check the Outputs of %s's template",
					stack, n, out, from, strings.Join(have, ", "), from)
			}
			v = val
		case tp.ParameterFiles[n] != "":
			path := tp.ParameterFiles[n]
			k, ok := keys[path]
			if !ok && hasDefault(tp.Parameters[n]) {
				// An optional file (charts/releases.json, absent when the
				// helm plugin is disabled): the template's default says
				// "nothing", and CloudFormation uses it for a parameter not
				// passed, on create and on update alike.
				continue
			}
			if !ok {
				return nil, fmt.Errorf("stack %s: its template fills %s with the S3 key of %s, which the render output does not have; run `kube-aws render` again", stack, n, path)
			}
			v = k
		case n == names.ParamAssetsBucket:
			v = p.loc.Bucket
		case n == names.ParamAssetsPrefix:
			v = p.loc.Prefix
		case n == names.ParamNodeAgentKeyAMD64 || n == names.ParamNodeAgentKeyARM64:
			arch := string(nodeplan.AMD64)
			if n == names.ParamNodeAgentKeyARM64 {
				arch = string(nodeplan.ARM64)
			}
			f, ok := p.nodeAgent[arch]
			if !ok {
				return nil, fmt.Errorf("stack %s: its template takes %s, and kube-aws-node for linux/%s was not found", stack, n, arch)
			}
			v = f.key
		case n == names.ParamUserDataKey:
			path := userDataFile(stack)
			k, ok := keys[path]
			if !ok {
				return nil, fmt.Errorf("stack %s: its template takes %s but the render output has no %s; run `kube-aws render` again, or check that the userdata plugin is enabled", stack, n, path)
			}
			v = k
		default:
			if tp.Parameters[n].Default == nil && update {
				// Not ours to set: keep what the stack has.
				in.params = append(in.params, types.Parameter{ParameterKey: aws.String(n), UsePreviousValue: aws.Bool(true)})
			}
			continue
		}
		in.params = append(in.params, types.Parameter{ParameterKey: aws.String(n), ParameterValue: aws.String(v)})
	}
	tags := map[string]string{}
	for k, v := range p.t.Cluster.Tags {
		tags[k] = v
	}
	for k, v := range spec.Tags {
		tags[k] = v
	}
	tags[names.TagCluster] = p.cluster
	tk := make([]string, 0, len(tags))
	for k := range tags {
		tk = append(tk, k)
	}
	sort.Strings(tk)
	for _, k := range tk {
		in.tags = append(in.tags, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return in, nil
}

// stackOutcome is what happened to one stack in a deploy.
type stackOutcome struct {
	stack   *types.Stack
	action  string // created, updated, unchanged, recreated
	changed bool
}

// deployStack brings one stack to its rendered state, resuming whatever an
// earlier run left behind. first is the stack as listed when the deploy
// began (nil: absent), which saves a call per stack; every later look is
// fresh.
func (e *Engine) deployStack(ctx context.Context, p *prepared, stack string, in *stackInput, first *types.Stack) (*stackOutcome, error) {
	recreated := false
	for attempt := 0; attempt < 5; attempt++ {
		cur := first
		if attempt > 0 {
			var err error
			if cur, err = e.describe(ctx, in.name); err != nil {
				return nil, err
			}
		}
		if cur == nil {
			st, err := e.create(ctx, stack, in)
			if err != nil {
				if apiCode(err) == "AlreadyExistsException" {
					continue // an earlier attempt of ours got through after all
				}
				return nil, err
			}
			action := "created"
			if recreated {
				action = "recreated"
			}
			return &stackOutcome{stack: st, action: action, changed: true}, nil
		}
		status := string(cur.StackStatus)
		switch {
		case cur.StackStatus == types.StackStatusReviewInProgress:
			// A change set of type CREATE was made but never executed (an
			// interrupted run, or another tool's preview). Such a stack
			// holds no resources, so it is deleted and created afresh with
			// the current template; executing a new CREATE change set would
			// do the same on AWS, but moto makes a second stack of the same
			// name for it and leaves its outputs empty.
			e.say(stack, "%s is in REVIEW_IN_PROGRESS (an unexecuted change set, no resources): replacing it", in.name)
			if err := e.deleteAndWait(ctx, stack, in.name); err != nil {
				return nil, err
			}
			continue
		case strings.HasSuffix(status, "_IN_PROGRESS"):
			// Another operation (an earlier, interrupted run's) is still
			// going: let it finish, then look again.
			e.say(stack, "%s is in %s: waiting for it to finish", in.name, status)
			if _, err := e.wait(ctx, stack, in.name, time.Time{}, nil); err != nil && !isStackFailure(err) {
				return nil, err
			}
			continue
		case cur.StackStatus == types.StackStatusRollbackComplete || cur.StackStatus == types.StackStatusRollbackFailed ||
			cur.StackStatus == types.StackStatusCreateFailed:
			why := e.failureSince(ctx, in.name, types.ResourceStatusCreateInProgress)
			if !e.opts.ConfirmRecreate {
				return nil, needsConfirmation{fmt.Sprintf("stack %s (%s) is in %s after a failed create%s; it holds no usable resources and must be deleted and created again: rerun with --yes to allow that",
					stack, in.name, status, why)}
			}
			e.say(stack, "%s is in %s after a failed create%s: deleting it to create it again", in.name, status, why)
			if err := e.deleteAndWait(ctx, stack, in.name); err != nil {
				return nil, err
			}
			recreated = true
			continue
		case cur.StackStatus == types.StackStatusUpdateRollbackFailed:
			return nil, fmt.Errorf("stack %s (%s) is in UPDATE_ROLLBACK_FAILED: fix the cause, then run `aws cloudformation continue-update-rollback --stack-name %s` and rerun", stack, in.name, in.name)
		case cur.StackStatus == types.StackStatusDeleteFailed:
			return nil, fmt.Errorf("stack %s (%s) is in DELETE_FAILED%s: delete it by hand or with `kube-aws destroy`, then rerun", stack, in.name, e.failureSince(ctx, in.name, types.ResourceStatusDeleteInProgress))
		default:
			// CREATE_COMPLETE, UPDATE_COMPLETE, UPDATE_ROLLBACK_COMPLETE,
			// IMPORT_*_COMPLETE: update through a change set.
			st, changed, err := e.changeSet(ctx, stack, in, types.ChangeSetTypeUpdate)
			if err != nil {
				return nil, err
			}
			if st == nil && cur.StackStatus != types.StackStatusCreateComplete && cur.StackStatus != types.StackStatusUpdateComplete {
				// Nothing to change after a rolled-back update: report the
				// status the stack has now, not the one before.
				if st, err = e.describe(ctx, in.name); err != nil {
					return nil, err
				}
			}
			if st == nil {
				st = cur
			}
			action := "unchanged"
			if changed {
				action = "updated"
			}
			return &stackOutcome{stack: st, action: action, changed: changed}, nil
		}
	}
	return nil, fmt.Errorf("stack %s (%s) kept changing state under us; is another tool working on it?", stack, in.name)
}

func (e *Engine) create(ctx context.Context, stack string, in *stackInput) (*types.Stack, error) {
	e.say(stack, "creating %s", in.name)
	started := time.Now()
	_, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName:    aws.String(in.name),
		TemplateBody: in.templateBody,
		TemplateURL:  in.templateURL,
		Parameters:   in.params,
		Capabilities: capabilities,
		Tags:         in.tags,
	})
	if err != nil {
		if apiCode(err) == "AlreadyExistsException" {
			return nil, err
		}
		return nil, fmt.Errorf("stack %s: creating %s: %w", stack, in.name, err)
	}

	return e.wait(ctx, stack, in.name, started, []types.StackStatus{types.StackStatusCreateComplete})
}

// changeSet updates (or, from REVIEW_IN_PROGRESS, creates) a stack through a
// change set. A change set without changes means nothing to do: it is
// deleted and changed is false.
func (e *Engine) changeSet(ctx context.Context, stack string, in *stackInput, typ types.ChangeSetType) (*types.Stack, bool, error) {
	cs, err := e.makeChangeSet(ctx, stack, in, typ, "kube-aws up")
	if err != nil {
		return nil, false, err
	}
	if cs == nil {
		return nil, false, nil
	}
	for _, c := range cs.changes {
		e.say(stack, "change: %s", c)
	}
	started := time.Now()
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{
		StackName: aws.String(in.name), ChangeSetName: aws.String(cs.name),
	}); err != nil {
		return nil, false, fmt.Errorf("stack %s: executing change set %s of %s: %w", stack, cs.name, in.name, err)
	}
	want := []types.StackStatus{types.StackStatusUpdateComplete}
	if typ == types.ChangeSetTypeCreate {
		want = []types.StackStatus{types.StackStatusCreateComplete}
	}
	st, err := e.wait(ctx, stack, in.name, started, want)
	return st, true, err
}

// changeSetResult is a change set that has changes.
type changeSetResult struct {
	name    string
	changes []stage.ResourceChange
}

// makeChangeSet creates a change set and waits until it is ready. It returns
// nil when there is nothing to change, having deleted the change set.
func (e *Engine) makeChangeSet(ctx context.Context, stack string, in *stackInput, typ types.ChangeSetType, desc string) (*changeSetResult, error) {
	// Unique per call: moto looks change sets up by name alone, and two
	// runs must never reuse each other's.
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("kube-aws-%s-%x", time.Now().UTC().Format("20060102-150405"), rnd)
	_, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{
		StackName:     aws.String(in.name),
		ChangeSetName: aws.String(name),
		ChangeSetType: typ,
		TemplateBody:  in.templateBody,
		TemplateURL:   in.templateURL,
		Parameters:    in.params,
		Capabilities:  capabilities,
		Tags:          in.tags,
		Description:   aws.String(desc),
	})
	if err != nil {
		// moto (and older CloudFormation) refuse an empty change set at
		// once instead of making a FAILED one.
		if noChanges(apiMessage(err)) {
			return nil, nil
		}
		return nil, fmt.Errorf("stack %s: creating a change set for %s: %w", stack, in.name, err)
	}
	res := &changeSetResult{name: name}
	delay := 200 * time.Millisecond
	for {
		var token *string
		var status types.ChangeSetStatus
		var reason string
		res.changes = res.changes[:0]
		for {
			out, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{
				StackName: aws.String(in.name), ChangeSetName: aws.String(name), NextToken: token,
			})
			if err != nil {
				return nil, fmt.Errorf("stack %s: reading change set %s of %s: %w", stack, name, in.name, err)
			}
			status, reason = out.Status, aws.ToString(out.StatusReason)
			for _, c := range out.Changes {
				if rc := c.ResourceChange; rc != nil {
					res.changes = append(res.changes, stage.ResourceChange{
						Action:       string(rc.Action),
						LogicalID:    aws.ToString(rc.LogicalResourceId),
						PhysicalID:   aws.ToString(rc.PhysicalResourceId),
						ResourceType: aws.ToString(rc.ResourceType),
						Replacement:  string(rc.Replacement),
					})
				}
			}
			if token = out.NextToken; token == nil {
				break
			}
		}
		switch status {
		case types.ChangeSetStatusCreateComplete:
			return res, nil
		case types.ChangeSetStatusFailed:
			e.deleteChangeSet(ctx, in.name, name)
			if noChanges(reason) {
				return nil, nil
			}
			return nil, fmt.Errorf("stack %s: change set %s of %s failed: %s", stack, name, in.name, reason)
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("stack %s: waiting for change set %s of %s: %w", stack, name, in.name, err)
		}
		delay = min(delay*2, e.opts.PollInterval)
	}
}

func (e *Engine) deleteChangeSet(ctx context.Context, stackName, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, _ = e.cfn.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{StackName: aws.String(stackName), ChangeSetName: aws.String(name)})
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stackFailure is a stack operation that ended in a failed state.
type stackFailure struct {
	stack, name, status, detail string
}

func (f *stackFailure) Error() string {
	return fmt.Sprintf("stack %s (%s) ended in %s%s", f.stack, f.name, f.status, f.detail)
}

func isStackFailure(err error) bool {
	_, ok := err.(*stackFailure)
	return ok
}

// wait polls the stack until no operation is in progress, reporting its
// events line by line. It polls fast at first (moto and small stacks finish
// in well under a second) and backs off to PollInterval. With want empty any
// final state is accepted; otherwise another final state is a failure that
// names the first failed resource and its reason.
//
// The stack is polled by name: moto cannot look a stack up by id once it is
// deleted. since limits the events reported to this operation's.
func (e *Engine) wait(ctx context.Context, stack, name string, since time.Time, want []types.StackStatus) (*types.Stack, error) {
	seen := map[string]bool{}
	delay := 100 * time.Millisecond
	for {
		st, err := e.describe(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("stack %s: waiting for %s: %w; rerun to resume", stack, name, err)
		}
		if st == nil {
			if len(want) == 0 {
				return nil, nil // someone else's delete finished: nothing to wait for
			}
			return nil, fmt.Errorf("stack %s: %s disappeared while waiting for it", stack, name)
		}
		if !since.IsZero() {
			e.reportEvents(ctx, stack, name, since, seen)
		}
		status := st.StackStatus
		if !strings.HasSuffix(string(status), "_IN_PROGRESS") {
			if len(want) == 0 {
				return st, nil
			}
			for _, w := range want {
				if status == w {
					return st, nil
				}
			}
			start := types.ResourceStatusUpdateInProgress
			if want[0] == types.StackStatusCreateComplete {
				start = types.ResourceStatusCreateInProgress
			}
			return st, &stackFailure{stack: stack, name: name, status: string(status), detail: e.failureSince(ctx, name, start)}
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("stack %s: waiting for %s (now %s): %w; rerun to resume", stack, name, status, err)
		}
		delay = min(delay*2, e.opts.PollInterval)
	}
}

// reportEvents reports the stack's events since the operation began that
// were not reported yet, oldest first. Only the first page is read: a page
// holds the latest events, and polls come more often than pages fill.
func (e *Engine) reportEvents(ctx context.Context, stack, name string, since time.Time, seen map[string]bool) {
	out, err := e.cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(name)})
	if err != nil {
		return // events are progress only; the status poll decides
	}
	// A second of slack for clock skew between us and the service.
	cut := since.Add(-time.Second)
	for i := len(out.StackEvents) - 1; i >= 0; i-- {
		ev := out.StackEvents[i]
		id := aws.ToString(ev.EventId)
		if seen[id] || aws.ToTime(ev.Timestamp).Before(cut) {
			continue
		}
		seen[id] = true
		e.report(Event{
			Time: aws.ToTime(ev.Timestamp), Kind: EventStack, Stack: stack,
			LogicalID: aws.ToString(ev.LogicalResourceId), ResourceType: aws.ToString(ev.ResourceType),
			Status: string(ev.ResourceStatus), Reason: aws.ToString(ev.ResourceStatusReason),
		})
	}
}

// failureSince finds, among the events of the stack's latest operation that
// began with the stack itself in status start, the first resource that
// failed, and returns ": resource X (type) STATUS: reason" or "".
func (e *Engine) failureSince(ctx context.Context, name string, start types.ResourceStatus) string {
	var events []types.StackEvent
	var token *string
	for page := 0; page < 5; page++ {
		out, err := e.cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(name), NextToken: token})
		if err != nil {
			break
		}
		events = append(events, out.StackEvents...)
		if token = out.NextToken; token == nil {
			break
		}
	}
	// Events come newest first: the operation is everything up to the
	// stack's own latest start event.
	op := events
	for i, ev := range events {
		if aws.ToString(ev.LogicalResourceId) == name && ev.ResourceStatus == start {
			op = events[:i+1]
			break
		}
	}
	var stackReason string
	for i := len(op) - 1; i >= 0; i-- {
		ev := op[i]
		if !strings.HasSuffix(string(ev.ResourceStatus), "_FAILED") {
			continue
		}
		if aws.ToString(ev.LogicalResourceId) == name {
			if stackReason == "" {
				stackReason = aws.ToString(ev.ResourceStatusReason)
			}
			continue
		}
		return fmt.Sprintf(": resource %s (%s) %s: %s", aws.ToString(ev.LogicalResourceId), aws.ToString(ev.ResourceType), ev.ResourceStatus, aws.ToString(ev.ResourceStatusReason))
	}
	if stackReason != "" {
		return ": " + stackReason
	}
	return ""
}

// deleteAndWait deletes a stack and waits until it is gone.
func (e *Engine) deleteAndWait(ctx context.Context, stack, name string) error {
	e.say(stack, "deleting %s", name)
	started := time.Now()
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(name)}); err != nil {
		// An emulator (moto) can report a failure from a delete it went on
		// to complete; what counts is whether the stack is still there.
		if st, derr := e.describe(ctx, name); derr == nil && (st == nil || st.StackStatus == types.StackStatusDeleteComplete) {
			e.say(stack, "deleted %s (DeleteStack reported: %v)", name, err)
			return nil
		}
		return fmt.Errorf("stack %s: deleting %s: %w", stack, name, err)
	}
	seen := map[string]bool{}
	delay := 100 * time.Millisecond
	for {
		st, err := e.describe(ctx, name)
		if err != nil {
			return fmt.Errorf("stack %s: waiting for %s to be deleted: %w; rerun to resume", stack, name, err)
		}
		if st == nil || st.StackStatus == types.StackStatusDeleteComplete {
			e.say(stack, "deleted %s", name)
			return nil
		}
		e.reportEvents(ctx, stack, name, started, seen)
		if st.StackStatus == types.StackStatusDeleteFailed {
			return &stackFailure{stack: stack, name: name, status: string(st.StackStatus), detail: e.failureSince(ctx, name, types.ResourceStatusDeleteInProgress)}
		}
		if err := sleep(ctx, delay); err != nil {
			return fmt.Errorf("stack %s: waiting for %s to be deleted (now %s): %w; rerun to resume", stack, name, st.StackStatus, err)
		}
		delay = min(delay*2, e.opts.PollInterval)
	}
}

// ErrNeedsConfirmation is what errors.Is finds in an error that the same
// deploy, run again with ConfirmRecreate (--yes), gets past.
var ErrNeedsConfirmation = errors.New("needs confirmation: rerun with --yes")

type needsConfirmation struct{ msg string }

func (e needsConfirmation) Error() string        { return e.msg }
func (e needsConfirmation) Is(target error) bool { return target == ErrNeedsConfirmation }
