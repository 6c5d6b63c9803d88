package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/builtin/internal/bootstrap"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// launchPlan is what a machine is launched with: the parts of its launch
// template version a change of which replaces it, and the summary of the
// userdata it boots (nodeplan.Summary).
type launchPlan struct {
	instanceType, imageID string
	boot                  bootstrap.Launched
	summary               nodeplan.Summary
	// unknown says the plan could not be read (a version gone, an object
	// deleted): only "launch template changed" can be said.
	unknown bool
}

// reasons says what differs from old to new, one phrase each.
func (n launchPlan) reasons(old launchPlan) []string {
	if n.unknown || old.unknown {
		return []string{"its launch template changed"}
	}
	var out []string
	if n.instanceType != old.instanceType && n.instanceType != "" {
		out = append(out, fmt.Sprintf("instance type %s -> %s", old.instanceType, n.instanceType))
	}
	if n.imageID != old.imageID && n.imageID != "" && !strings.HasPrefix(n.imageID, "{") {
		out = append(out, fmt.Sprintf("image %s -> %s", old.imageID, n.imageID))
	}
	if n.boot.UserDataKey != old.boot.UserDataKey {
		ch := n.summary.Changes(old.summary)
		if len(ch) == 0 {
			ch = []string{"its userdata changed"}
		}
		out = append(out, ch...)
	}
	if n.boot.NodeAgentAMD64 != old.boot.NodeAgentAMD64 || n.boot.NodeAgentARM64 != old.boot.NodeAgentARM64 {
		out = append(out, "kube-aws-node changed")
	}
	if len(out) == 0 {
		out = append(out, "its launch template changed")
	}
	return out
}

// explainer reads launch template versions and userdata summaries once
// each, for the machines of one run.
type explainer struct {
	e *Engine
	p *prepared

	mu       sync.Mutex
	versions map[string]launchPlan       // template id@version
	sums     map[string]nodeplan.Summary // userdata key
}

func newExplainer(e *Engine, p *prepared) *explainer {
	return &explainer{e: e, p: p, versions: map[string]launchPlan{}, sums: map[string]nodeplan.Summary{}}
}

// version is the plan of one launch template version.
func (x *explainer) version(ctx context.Context, templateID, version string) (launchPlan, error) {
	k := templateID + "@" + version
	x.mu.Lock()
	lp, ok := x.versions[k]
	x.mu.Unlock()
	if ok {
		return lp, nil
	}
	out, err := x.e.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(templateID), Versions: []string{version}})
	switch {
	case err != nil && strings.Contains(apiCode(err), "NotFound"):
		lp.unknown = true
	case err != nil:
		return lp, fmt.Errorf("reading version %s of launch template %s: %w", version, templateID, err)
	case len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil:
		lp.unknown = true
	default:
		d := out.LaunchTemplateVersions[0].LaunchTemplateData
		lp.instanceType = string(d.InstanceType)
		lp.imageID = aws.ToString(d.ImageId)
		script, err := base64.StdEncoding.DecodeString(aws.ToString(d.UserData))
		if err == nil {
			lp.boot = bootstrap.ReadLaunched(string(script))
		}
		if lp.summary, err = x.summary(ctx, lp.boot.UserDataKey); err != nil {
			return lp, err
		}
	}
	x.mu.Lock()
	x.versions[k] = lp
	x.mu.Unlock()
	return lp, nil
}

// summary reads the summary of the userdata at key; empty when there is no
// key or no object (a bucket cleaned up).
func (x *explainer) summary(ctx context.Context, key string) (nodeplan.Summary, error) {
	if key == "" {
		return nodeplan.Summary{}, nil
	}
	x.mu.Lock()
	s, ok := x.sums[key]
	x.mu.Unlock()
	if ok {
		return s, nil
	}
	out, err := x.e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(x.p.loc.Bucket), Key: aws.String(key)})
	if err != nil {
		if apiCode(err) != "NoSuchKey" {
			return s, fmt.Errorf("reading userdata s3://%s/%s: %w", x.p.loc.Bucket, key, err)
		}
	} else {
		b, err := io.ReadAll(io.LimitReader(out.Body, 4<<20))
		out.Body.Close()
		if err != nil {
			return s, fmt.Errorf("reading userdata s3://%s/%s: %w", x.p.loc.Bucket, key, err)
		}
		s = nodeplan.ParseSummary(b)
	}
	x.mu.Lock()
	x.sums[key] = s
	x.mu.Unlock()
	return s, nil
}

// rendered is the plan the render gives a machine stack's launch template:
// its instance type and image when they are literal, the keys deploy
// uploads the role's userdata and kube-aws-node at, and the userdata's
// summary.
func (x *explainer) rendered(stack string, keys map[string]string, contents map[string][]byte) launchPlan {
	var lp launchPlan
	t := x.p.tmpl[stack]
	if r, ok := t.Resources[names.LaunchTemplate]; ok {
		var props struct {
			LaunchTemplateData struct {
				InstanceType string          `json:"InstanceType"`
				ImageID      json.RawMessage `json:"ImageId"`
			} `json:"LaunchTemplateData"`
		}
		if json.Unmarshal(r.Properties, &props) == nil {
			lp.instanceType = props.LaunchTemplateData.InstanceType
			var id string
			if json.Unmarshal(props.LaunchTemplateData.ImageID, &id) == nil {
				lp.imageID = id
			}
		}
	}
	if file := names.UserDataFile(stack); file != "" {
		lp.boot.UserDataKey = keys[file]
		lp.summary = nodeplan.ParseSummary(contents[file])
	}
	lp.boot.NodeAgentAMD64 = x.p.nodeAgent[string(nodeplan.AMD64)].key
	lp.boot.NodeAgentARM64 = x.p.nodeAgent[string(nodeplan.ARM64)].key
	return lp
}

// explain says what differs from one version of a launch template to
// another, for a machine of the first.
func (x *explainer) explain(ctx context.Context, templateID, from, to string) (string, error) {
	if templateID == "" || from == "" {
		return "", nil
	}
	old, err := x.version(ctx, templateID, from)
	if err != nil {
		return "", err
	}
	n, err := x.version(ctx, templateID, to)
	if err != nil {
		return "", err
	}
	return strings.Join(n.reasons(old), "; "), nil
}
