package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// machine is one instance of a machine stack's auto scaling group, with
// the status object kube-aws-node keeps for it (nil: none was written).
type machine struct {
	stack      string // rendered stack, nodepool-a
	stackName  string // its CloudFormation name
	role       string // the role the status key names: names.UserDataName(stack)
	instanceID string
	address    string // the instance's private IPv4, when its status lacks one
	launched   time.Time
	status     *nodeplan.Status
}

// judgeMachines says which machines failed a boot step or have not reached
// their role's goal: a failed step is fatal; a machine not ready longer
// than grace after its launch is fatal; a younger one is a warning (still
// booting); a ready one says nothing.
func judgeMachines(ms []machine, now time.Time, grace time.Duration) diag.List {
	var ds diag.List
	for _, m := range ms {
		st := m.status
		if st != nil && st.Phase == nodeplan.PhaseReady {
			continue
		}
		d := diag.Diagnostic{Severity: diag.Fatal, Stage: "validate", Path: "stacks/" + m.stack + "/instances/" + m.instanceID,
			Hint: consoleHint(m.instanceID)}
		age := now.Sub(m.launched).Round(time.Second)
		switch {
		case st != nil && st.Phase == nodeplan.PhaseFailed:
			d.Message = fmt.Sprintf("%s failed at step %s: %s", m.describe(), st.Step, st.Error)
		case age < grace:
			d.Severity = diag.Warning
			if st == nil {
				d.Message = fmt.Sprintf("%s has not reported a status yet, %s after launch", m.describe(), age)
			} else {
				d.Message = fmt.Sprintf("%s is still booting, at step %s (%s), %s after launch", m.describe(), st.Step, st.Phase, age)
			}
			d.Hint = fmt.Sprintf("run validate again in a few minutes: a machine not ready %s after launch is fatal", grace)
		case st == nil:
			d.Message = fmt.Sprintf("%s never reported a status, %s after launch: %s", m.describe(), age, goalMissed(m.role))
			d.Hint += "; a machine that never reports did not run kube-aws-node or cannot write its status to the assets bucket"
		default:
			d.Message = fmt.Sprintf("%s is stuck at step %s (%s, last reported %s), %s after launch: %s", m.describe(), st.Step, st.Phase, st.Time, age, goalMissed(m.role))
		}
		ds = append(ds, d)
	}
	return ds
}

func (m machine) describe() string {
	addr := m.address
	if m.status != nil && m.status.Address != "" {
		addr = m.status.Address
	}
	who := m.role
	if addr != "" {
		who += ", " + addr
	}
	return fmt.Sprintf("machine %s (%s) of stack %s", m.instanceID, who, m.stackName)
}

// goalMissed says what a role's machine that is not ready failed to become.
func goalMissed(role string) string {
	if role == names.RoleEtcd {
		return "etcd member never became healthy"
	}
	return "node never registered or became Ready"
}

func consoleHint(id string) string {
	return "read the machine's console output (aws ec2 get-console-output --instance-id " + id + ") or its journal"
}

// validateMachines judges every live instance of a machine stack's groups
// by its status object: <prefix>/status/<role>/<instance-id>.json.
func (e *Engine) validateMachines(ctx context.Context, p *prepared, stack, role string, groups []astypes.AutoScalingGroup) (diag.List, error) {
	var ids []string
	for _, g := range groups {
		for _, i := range g.Instances {
			if !strings.HasPrefix(string(i.LifecycleState), "Terminat") {
				ids = append(ids, aws.ToString(i.InstanceId))
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	sort.Strings(ids)
	name := p.stackName(stack)
	// A filter, not InstanceIds: an instance gone since the groups were
	// described is left out rather than failing the call.
	byID := map[string]ec2types.Instance{}
	pg := ec2.NewDescribeInstancesPaginator(e.ec2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: ids}}})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the instances of stack %s: %w", name, err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				byID[aws.ToString(i.InstanceId)] = i
			}
		}
	}
	var ms []machine
	for _, id := range ids {
		i, ok := byID[id]
		if !ok || i.State == nil || i.State.Name == ec2types.InstanceStateNameTerminated || i.State.Name == ec2types.InstanceStateNameShuttingDown {
			continue
		}
		ms = append(ms, machine{stack: stack, stackName: name, role: role, instanceID: id,
			address: aws.ToString(i.PrivateIpAddress), launched: aws.ToTime(i.LaunchTime)})
	}
	idx := make([]int, len(ms))
	for i := range idx {
		idx[i] = i
	}
	err := forEach(ctx, e.opts.Parallelism, idx, func(ctx context.Context, i int) error {
		st, err := e.readStatus(ctx, p, role, ms[i].instanceID)
		ms[i].status = st // each call its own element
		return err
	})
	if err != nil {
		return nil, err
	}
	return judgeMachines(ms, e.opts.Now(), e.opts.BootGrace), nil
}

// readStatus reads a machine's status object; nil when there is none.
func (e *Engine) readStatus(ctx context.Context, p *prepared, role, id string) (*nodeplan.Status, error) {
	key := p.loc.key(nodeplan.StatusKey(role, id))
	out, err := e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.loc.Bucket), Key: aws.String(key)})
	if err != nil {
		if apiCode(err) == "NoSuchKey" {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the status of machine %s (s3://%s/%s): %w", id, p.loc.Bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the status of machine %s (s3://%s/%s): %w", id, p.loc.Bucket, key, err)
	}
	var st nodeplan.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("the status of machine %s (s3://%s/%s) is not a status object: %w", id, p.loc.Bucket, key, err)
	}
	return &st, nil
}
