package nodeplan

import (
	"encoding/json"
	"strings"
	"testing"
)

const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// validPlans are one valid plan of each kind; the cases below break one
// field at a time.
func validArtifacts() *ArtifactsPlan {
	return &ArtifactsPlan{
		Binaries: []Binary{{Name: "kubelet", Path: "/usr/local/bin/kubelet", Mode: "0755", Sources: map[Arch]Source{
			AMD64: {AssetKey: "assets/" + sum, SHA256: sum},
			ARM64: {URL: "https://dl.k8s.io/v1.34.4/bin/linux/arm64/kubelet", SHA256: sum},
		}}},
		Images: []Image{{Name: "pause", Reference: "registry.k8s.io/pause:3.10.1", Sources: map[Arch]ImageSource{
			AMD64: {AssetKey: "assets/" + sum, SHA256: sum},
			ARM64: {Digest: "sha256:" + sum},
		}}},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		plan   Plan
		fields []string // every field the error must name; none: valid
	}{
		{"secrets ok", &SecretsPlan{Files: []SecretFile{{Path: "/etc/a.json", Format: FormatJSON}, {Path: "/etc/b.env", Format: FormatEnv}}}, nil},
		{"secrets bad", &SecretsPlan{Files: []SecretFile{{Path: "etc/a", Format: "toml"}, {Path: "/x/../y", Format: FormatYAML}, {Path: "/y", Format: FormatWhole}, {Path: "/y", Format: FormatWhole}}},
			[]string{"files[0].path", "files[0].format", "files[1].path", "files[3].path"}},
		{"artifacts ok", validArtifacts(), nil},
		{"artifacts bad", &ArtifactsPlan{
			Binaries: []Binary{
				{Path: "/bin/x", Mode: "0999", Sources: map[Arch]Source{"x86": {URL: "ftp://x", SHA256: "abc"}}},
				{Name: "y", Path: "/bin/y", Sources: map[Arch]Source{AMD64: {AssetKey: "assets/" + strings.Repeat("f", 64), SHA256: sum, URL: "https://x/y"}}},
				{Name: "z", Path: "/bin/z", Sources: map[Arch]Source{AMD64: {AssetKey: "assets/" + strings.Repeat("f", 64), SHA256: sum}}},
				{Name: "w", Path: "/bin/w", Sources: map[Arch]Source{AMD64: {URL: "https://x/w.tgz", SHA256: sum, Member: "../w"}}},
				{Name: "v", Path: "/bin/v"},
			},
			Images: []Image{
				{Name: "a", Reference: "pause:3.10", Sources: map[Arch]ImageSource{AMD64: {Digest: "sha256:1"}}},
				{Name: "b", Reference: "registry.k8s.io/b:1", Sources: map[Arch]ImageSource{AMD64: {AssetKey: "assets/" + sum, SHA256: sum, Digest: "sha256:" + sum}}},
				{Name: "c", Reference: "registry.k8s.io/c@sha256:" + sum, Sources: map[Arch]ImageSource{AMD64: {Digest: "sha256:" + sum, SHA256: sum}}},
			},
		}, []string{"binaries[0].name", "binaries[0].mode", "binaries[0].sources:", "binaries[0].sources.x86.sha256", "binaries[0].sources.x86.url",
			"binaries[1].sources.amd64:", "binaries[2].sources.amd64.assetKey", "binaries[3].sources.amd64.member", "binaries[4].sources:",
			"images[0].reference", "images[0].sources.amd64.digest", "images[1].sources.amd64:", "images[2].reference", "images[2].sources.amd64.sha256"}},
		{"certificates ok", &CertificatesPlan{Certificates: []Certificate{{
			Name: "etcd-peer", CACert: "/etc/etcd/ca.pem", CAKey: "/etc/etcd/ca-key.pem",
			Subject: Subject{CommonName: "{member}", Organizations: []string{"etcd"}}, Usages: []Usage{UsageServerAuth, UsageClientAuth},
			Validity: "8760h", DNSNames: []string{"{member}.demo.internal", "{hostname}", "localhost"}, IPAddresses: []string{"{privateIPv4}", "127.0.0.1"},
			Cert: "/etc/etcd/peer.pem", Key: "/etc/etcd/peer-key.pem", Owner: "etcd:etcd",
			Kubeconfig: &Kubeconfig{Path: "/etc/kubernetes/x.kubeconfig", Server: "https://{privateIPv4}:6443"},
		}}}, nil},
		{"certificates bad", &CertificatesPlan{Certificates: []Certificate{{
			CACert: "ca.pem", Subject: Subject{CommonName: "{bad name}"}, Usages: []Usage{"code signing"}, Validity: "1y",
			DNSNames: []string{"under_score.example", "{x"}, IPAddresses: []string{"300.1.1.1"}, KeyAlgorithm: "dsa",
			Cert: "/a", Key: "/a", Owner: "a:b:c", Kubeconfig: &Kubeconfig{Path: "/a", Server: "http://x"},
		}}}, []string{"certificates[0].name", "certificates[0].caCert", "certificates[0].caKey", "certificates[0].key", "certificates[0].subject.commonName",
			"certificates[0].usages[0]", "certificates[0].validity", "certificates[0].dnsNames[0]", "certificates[0].dnsNames[1]", "certificates[0].ipAddresses[0]",
			"certificates[0].keyAlgorithm", "certificates[0].owner", "certificates[0].kubeconfig.path", "certificates[0].kubeconfig.server"}},
		{"certificates no usages", &CertificatesPlan{Certificates: []Certificate{{Name: "a", CACert: "/c", CAKey: "/k", Subject: Subject{CommonName: "a"}, Cert: "/a", Key: "/b"}}},
			[]string{"certificates[0].usages"}},
		{"volumes ok", &VolumesPlan{Volumes: []Volume{{Name: "etcd-data", Tags: map[string]string{"kube-aws:etcd-data": "demo"}, Device: "/dev/xvdf",
			Filesystem: "ext4", MountPoint: "/var/lib/etcd", Facts: map[string]string{"member": "kube-aws:etcd-member"}}}}, nil},
		{"volumes bad", &VolumesPlan{Volumes: []Volume{
			{Device: "/dev/sda1", Filesystem: "btrfs", MountPoint: "/", MountOptions: "a b", Facts: map[string]string{"hostname": "x", "1x": "y", "ok": ""}},
			{Name: "b", VolumeID: "v-1", Tags: map[string]string{"a": "b"}, Device: "/dev/xvdg", Filesystem: "xfs", MountPoint: "/data"},
			{Name: "c", VolumeID: "vol-1", Device: "/dev/xvdg", Filesystem: "xfs", MountPoint: "/data"},
		}}, []string{"volumes[0].name", "volumes[0]:", "volumes[0].device", "volumes[0].filesystem", "volumes[0].mountPoint", "volumes[0].mountOptions",
			"volumes[0].facts:", "volumes[0].facts.ok", "volumes[1]:", "volumes[2].device", "volumes[2].mountPoint"}},
		{"dns ok", &DNSPlan{Records: []Record{{ZoneName: "demo.internal", Name: "{member}.demo.internal"}, {HostedZoneID: "Z123", Name: "x.demo.internal", Type: "CNAME", Value: "{hostname}", TTL: 30}}}, nil},
		{"dns bad", &DNSPlan{Records: []Record{{Name: "a..b", Type: "MX", TTL: -1}, {HostedZoneID: "/hostedzone/Z1", ZoneName: "x", Name: "a", Value: "1.2.3"}}},
			[]string{"records[0]:", "records[0].name", "records[0].type", "records[0].ttl", "records[1]:", "records[1].hostedZoneID", "records[1].value"}},
		{"addons ok", &AddonsPlan{Kubeconfig: "/etc/kubernetes/admin.kubeconfig",
			Releases:  []Release{{Name: "coredns", Namespace: "kube-system", ChartKey: "assets/" + sum, ChartSHA256: sum, Values: json.RawMessage(`{"a":"((secret:x/y))"}`), Timeout: "5m"}},
			Manifests: []Manifest{{Path: "/etc/kubernetes/addons/a.yaml"}}}, nil},
		{"addons bad", &AddonsPlan{
			Releases: []Release{
				{Name: "Bad_Name", Namespace: "kube_system", ChartKey: "charts/x.tgz", ChartSHA256: sum, Values: json.RawMessage(`[1]`), Timeout: "soon"},
				{Name: "a", Namespace: "b", ChartKey: "assets/" + sum, ChartSHA256: sum},
				{Name: "a", Namespace: "b", ChartKey: "assets/" + sum, ChartSHA256: "x"},
			},
			Manifests: []Manifest{{Path: "a.yaml"}, {Path: "/b"}, {Path: "/b"}}},
			[]string{"kubeconfig", "releases[0].name", "releases[0].namespace", "releases[0].chartKey", "releases[0].values", "releases[0].timeout",
				"releases[2]:", "releases[2].chartSHA256", "manifests[0].path", "manifests[2].path"}},
		{"addons from a list ok", &AddonsPlan{Kubeconfig: "/etc/kubernetes/admin.conf", ReleasesFrom: "{addonsKey}"}, nil},
		{"addons releasesFrom bad fact", &AddonsPlan{Kubeconfig: "/etc/kubernetes/admin.conf", ReleasesFrom: "{addons-key"}, []string{"releasesFrom"}},
		{"release list ok", &ReleaseList{Releases: []Release{
			{Name: "coredns", Namespace: "kube-system", ChartKey: "assets/" + sum, ChartSHA256: sum},
			{Name: "ingress", Namespace: "ingress", Repository: "https://charts.example.com", Chart: "ingress-nginx", Version: "4.11.0"}}}, nil},
		{"release list bad", &ReleaseList{Releases: []Release{
			{Name: "a", Namespace: "b", Repository: "ftp://x", ChartKey: "assets/" + sum},
			{Name: "c", Namespace: "b", Repository: "https://charts.example.com"},
			{Name: "d", Namespace: "b"}}},
			[]string{"releases[0]:", "releases[0].repository", "releases[0].chart", "releases[1].chart", "releases[2].chartSHA256"}},
		{"goal node ok", &GoalPlan{Node: &NodeGoal{Kubeconfig: "/etc/kubernetes/kubelet.kubeconfig"}}, nil},
		{"goal etcd ok", &GoalPlan{Etcd: &EtcdGoal{Endpoints: []string{"https://{privateIPv4}:2379"}, CACert: "/a", Cert: "/b", Key: "/c"}, Timeout: "2m"}, nil},
		{"goal none", &GoalPlan{}, []string{"node|etcd"}},
		{"goal both bad", &GoalPlan{Node: &NodeGoal{NodeName: "{x"}, Etcd: &EtcdGoal{Endpoints: []string{"{privateIPv4}:2379"}}, Timeout: "-1s"},
			[]string{"node|etcd", "node.kubeconfig", "node.nodeName", "etcd.endpoints[0]", "etcd.caCert", "etcd.cert", "etcd.key", "timeout"}},
		{"approver ok", &ApproverPlan{Kubeconfig: "/etc/kubernetes/admin.kubeconfig"}, nil},
		{"approver bad", &ApproverPlan{}, []string{"kubeconfig"}},
		{"goal node with readyz ok", &GoalPlan{Node: &NodeGoal{Kubeconfig: "/etc/kubernetes/admin.conf",
			APIReadyz: []string{"https://127.0.0.1:443/readyz", "https://{apiLoadBalancerDNS}:443/readyz"}}}, nil},
		{"goal node with readyz bad", &GoalPlan{Node: &NodeGoal{Kubeconfig: "/etc/kubernetes/admin.conf",
			APIReadyz: []string{"https://127.0.0.1/readyz", "http://{apiLoadBalancerDNS}/readyz", "{apiLoadBalancerDNS}/readyz", "https://{api-lb}/readyz"}}},
			[]string{"node.apiReadyz[1]", "node.apiReadyz[2]", "node.apiReadyz[3]"}},
		{"goal node with daemonSets ok", &GoalPlan{Node: &NodeGoal{Kubeconfig: "/etc/kubernetes/admin.conf",
			DaemonSets: []NodeDaemonSet{{Namespace: "kube-system", Name: "kube-proxy", Digest: sum}, {Namespace: "kube-system", Name: "aws-cloud-controller-manager", Digest: sum}}}}, nil},
		{"goal node with daemonSets bad", &GoalPlan{Node: &NodeGoal{Kubeconfig: "/etc/kubernetes/admin.conf",
			DaemonSets: []NodeDaemonSet{{Namespace: "kube_system", Name: "Kube-Proxy", Digest: "abc"}, {Namespace: "a", Name: "b", Digest: sum}, {Namespace: "a", Name: "b", Digest: sum}}}},
			[]string{"node.daemonSets[0].namespace", "node.daemonSets[0].name", "node.daemonSets[0].digest", "node.daemonSets[2]:"}},
		{"drainer ok", &DrainerPlan{Kubeconfig: "/etc/kubernetes/admin.conf", Hook: "kube-aws-drain", Timeout: "5m", Force: true}, nil},
		{"drainer defaults ok", &DrainerPlan{Kubeconfig: "/etc/kubernetes/admin.conf", Hook: "kube-aws-drain"}, nil},
		{"drainer bad", &DrainerPlan{Kubeconfig: "admin.conf", Hook: "kube aws drain", Timeout: "0s"}, []string{"kubeconfig", "hook", "timeout"}},
		{"drainer no hook", &DrainerPlan{Kubeconfig: "/etc/kubernetes/admin.conf"}, []string{"hook"}},
		{"pod identity webhook ok", &PodIdentityWebhookPlan{Kubeconfig: "/etc/kubernetes/admin.conf", CACert: "/etc/kubernetes/pki/ca.crt", CAKey: "/etc/kubernetes/pki/ca.key"}, nil},
		{"pod identity webhook bad", &PodIdentityWebhookPlan{Kubeconfig: "admin.conf", CAKey: "ca.key"}, []string{"kubeconfig", "caCert", "caKey"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plan.Validate()
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("valid plan refused: %v", err)
				}
				// A valid plan encodes, and decodes back to an equal plan.
				b, err := Encode(tt.plan)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := json.Marshal(tt.plan)
				if err := Decode(b, tt.plan); err != nil {
					t.Fatalf("encoded plan does not decode: %v\n%s", err, b)
				}
				if after, _ := json.Marshal(tt.plan); string(after) != string(again) {
					t.Errorf("round trip changed the plan:\n%s\n%s", again, after)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid plan accepted")
			}
			var probs Problems
			if p, ok := err.(Problems); ok {
				probs = p
			} else {
				t.Fatalf("error is %T, want Problems", err)
			}
			named := map[string]bool{}
			for _, p := range probs {
				named[p.Field+":"] = true
				named[p.Field] = true
				if p.Message == "" {
					t.Errorf("%s: empty message", p.Field)
				}
			}
			for _, f := range tt.fields {
				if !named[f] {
					t.Errorf("no problem for %s in:\n%v", f, err)
				}
			}
			if _, err := Encode(tt.plan); err == nil {
				t.Error("Encode wrote an invalid plan")
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
	}{
		{"syntax", "{\n  \"files\": [\n    {\"path\": \"/a\",}\n  ]\n}", []string{"line 3 column"}},
		{"unknown field", `{"files": [{"path": "/a", "format": "json", "fromat": "x"}]}`, []string{`unknown field "fromat"`}},
		{"wrong type", "{\n\"files\": {\"path\": \"/a\"}}", []string{"line 2", "files", "array"}},
		{"trailing", `{"files": []} {"files": []}`, []string{"data after"}},
		{"empty", ``, []string{"empty"}},
		{"invalid", `{"files": [{"path": "a", "format": "json"}]}`, []string{"files[0].path", "not absolute"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Decode([]byte(tt.data), &SecretsPlan{})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestExpand(t *testing.T) {
	f := Facts{FactPrivateIPv4: "10.0.1.5", FactHostname: "ip-10-0-1-5.ec2.internal", "member": "etcd0"}
	tests := []struct{ in, want, err string }{
		{"{member}.demo.internal", "etcd0.demo.internal", ""},
		{"https://{privateIPv4}:2379", "https://10.0.1.5:2379", ""},
		{"system:node:{hostname}", "system:node:ip-10-0-1-5.ec2.internal", ""},
		{"plain", "plain", ""},
		{"{instanceID}", "", "{instanceID}"},
	}
	for _, tt := range tests {
		got, err := f.Expand(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "{member}") {
				t.Errorf("Expand(%q) error = %v, want one naming %s and the facts there are", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if FactEnvName(FactPrivateIPv4) != "KUBE_AWS_FACT_PRIVATEIPV4" {
		t.Errorf("FactEnvName = %s", FactEnvName(FactPrivateIPv4))
	}
}

func TestKeys(t *testing.T) {
	if got := Key("", "status/etcd/i-1.json"); got != "status/etcd/i-1.json" {
		t.Errorf("Key with no prefix = %q", got)
	}
	if got := Key("/clusters/demo/", AssetKey(sum)); got != "clusters/demo/assets/"+sum {
		t.Errorf("Key = %q", got)
	}
	if got := SecretKey("controller", "((secret:dex/x))"); got != "roles/controller/secrets/"+SHA256Hex([]byte("((secret:dex/x))")) {
		t.Errorf("SecretKey = %q", got)
	}
	if got := StatusKey("nodepool-a", "i-1"); got != "status/nodepool-a/i-1.json" {
		t.Errorf("StatusKey = %q", got)
	}
	if d, ok := KeyDigest("p/roles/etcd/userdata/" + sum); !ok || d != sum {
		t.Errorf("KeyDigest = %q %v", d, ok)
	}
	if _, ok := KeyDigest("p/rendered/userdata/etcd.yaml"); ok {
		t.Error("KeyDigest accepted a key that is not content-addressed")
	}
}

func TestSettings(t *testing.T) {
	env := map[string]string{EnvCluster: "demo", EnvRegion: "us-east-1", EnvBucket: "b", EnvRole: "nodepool-spot1", EnvUserDataKey: "k"}
	var s Settings
	s.Fill(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	// A second source fills only what the first lacked.
	s.Fill(func(k string) (string, bool) {
		if k == EnvPrefix {
			return "p", true
		}
		return "", false
	})
	if s.Prefix != "p" || s.Cluster != "demo" {
		t.Errorf("Fill = %+v", s)
	}
	if got := strings.Join(s.Env(), " "); got != "KUBE_AWS_CLUSTER=demo KUBE_AWS_REGION=us-east-1 KUBE_AWS_BUCKET=b KUBE_AWS_PREFIX=p KUBE_AWS_ROLE=nodepool-spot1 KUBE_AWS_USERDATA_KEY=k" {
		t.Errorf("Env = %s", got)
	}
	if s.EncryptionContext()["kube-aws:role"] != "nodepool-spot1" || s.Key("status/x") != "p/status/x" {
		t.Errorf("EncryptionContext/Key wrong: %v %s", s.EncryptionContext(), s.Key("status/x"))
	}
	for _, bad := range []Settings{{}, {Cluster: "d", Region: "r", Bucket: "b", Role: "worker"}, {Cluster: "d", Region: "r", Bucket: "s3://b", Role: "etcd"}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := (Settings{}).Validate(); !strings.Contains(err.Error(), EnvCluster) || !strings.Contains(err.Error(), EnvRole) {
		t.Errorf("missing settings not named: %v", err)
	}
}

func TestSplitReference(t *testing.T) {
	tests := []struct {
		ref, repo, tag string
		ok             bool
	}{
		{"registry.k8s.io/pause:3.10.1", "registry.k8s.io/pause", "3.10.1", true},
		{"localhost:5000/a/b:v1", "localhost:5000/a/b", "v1", true},
		{"localhost:5000/a/b", "localhost:5000/a/b", "", true},
		{"pause:3", "pause", "3", false},
		{"registry.k8s.io/pause@sha256:" + sum, "", "", false},
	}
	for _, tt := range tests {
		repo, tag, ok := SplitReference(tt.ref)
		if repo != tt.repo || tag != tt.tag || ok != tt.ok {
			t.Errorf("SplitReference(%q) = %q %q %v", tt.ref, repo, tag, ok)
		}
	}
}
