// Package podspec builds the control plane's static pod manifests: the
// kube-apiserver's, which the userdata plugin places in the controllers'
// /etc/kubernetes/manifests from the API server flags and volumes every
// plugin contributed (the apiserver plugin contributes the defaults and
// checks the merged flags), and those of kube-controller-manager and
// kube-scheduler, which the kubernetes plugin contributes as files. It is a
// library the built-ins share (like builtin/internal/cfn), not part of a
// plugin: plugins never import each other (docs/design.md).
//
// The manifest is built as data and marshalled with sigs.k8s.io/yaml; it
// deliberately does not import k8s.io/api, whose package init would cost
// every userdata render tens of milliseconds for a dozen fields.
package podspec

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/kubeversion"
)

// Image is the kube-apiserver image repository; the tag is the cluster's
// Kubernetes version.
const Image = "registry.k8s.io/kube-apiserver"

// ManifestPath is where the kubelet on a controller reads the static pod.
const ManifestPath = "/etc/kubernetes/manifests/kube-apiserver.yaml"

// defaultSecurePort is kube-apiserver's own default for --secure-port.
const defaultSecurePort = 6443

type pod struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   metadata `json:"metadata"`
	Spec       podSpec  `json:"spec"`
}

type metadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type podSpec struct {
	HostNetwork       bool        `json:"hostNetwork"`
	PriorityClassName string      `json:"priorityClassName"`
	SecurityContext   podSecurity `json:"securityContext"`
	Containers        []container `json:"containers"`
	Volumes           []podVolume `json:"volumes,omitempty"`
}

type podSecurity struct {
	SeccompProfile seccompProfile `json:"seccompProfile"`
}

type seccompProfile struct {
	Type string `json:"type"`
}

type container struct {
	Name            string        `json:"name"`
	Image           string        `json:"image"`
	ImagePullPolicy string        `json:"imagePullPolicy"`
	Command         []string      `json:"command"`
	LivenessProbe   probe         `json:"livenessProbe"`
	ReadinessProbe  *probe        `json:"readinessProbe,omitempty"`
	StartupProbe    probe         `json:"startupProbe"`
	Resources       resources     `json:"resources"`
	VolumeMounts    []volumeMount `json:"volumeMounts,omitempty"`
}

type probe struct {
	HTTPGet             httpGet `json:"httpGet"`
	InitialDelaySeconds int     `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int     `json:"periodSeconds,omitempty"`
	TimeoutSeconds      int     `json:"timeoutSeconds"`
	FailureThreshold    int     `json:"failureThreshold"`
}

type httpGet struct {
	Host   string `json:"host"`
	Path   string `json:"path"`
	Port   int    `json:"port"`
	Scheme string `json:"scheme"`
}

type resources struct {
	Requests map[string]string `json:"requests"`
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type podVolume struct {
	Name     string       `json:"name"`
	HostPath hostPathSpec `json:"hostPath"`
}

type hostPathSpec struct {
	Path string `json:"path"`
	Type string `json:"type,omitempty"`
}

// StaticPod returns the kube-apiserver static pod manifest as YAML. Flags are
// sorted by name (stably, so a repeated flag keeps its merged order) and
// volumes by name, so the manifest is byte-identical whatever order the
// plugins that contributed them finished in.
func StaticPod(flags []construct.Flag, volumes []construct.Volume, kubernetesVersion string) ([]byte, error) {
	v, err := kubeversion.Parse(kubernetesVersion)
	if err != nil {
		return nil, err
	}
	if !v.HasPatch {
		// An image tag needs the full version; v1.30 is not a tag.
		return nil, fmt.Errorf("Kubernetes version %q: the API server image needs MAJOR.MINOR.PATCH", kubernetesVersion)
	}
	sorted := append([]construct.Flag(nil), flags...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	command := []string{"kube-apiserver"}
	port, host := defaultSecurePort, "127.0.0.1"
	for _, f := range sorted {
		if f.Name == "" {
			return nil, fmt.Errorf("kube-apiserver flag with an empty name (value %q)", f.Value)
		}
		if f.Value == "" {
			// --name= is refused by kube-apiserver for most flags; the
			// apiserver plugin's render check names the flag's plugin.
			return nil, fmt.Errorf("kube-apiserver flag --%s of plugin %q has an empty value", f.Name, f.Plugin)
		}
		command = append(command, "--"+f.Name+"="+f.Value)
		switch f.Name {
		case "secure-port":
			p, err := strconv.Atoi(f.Value)
			if err != nil || p <= 0 || p > 65535 {
				return nil, fmt.Errorf("kube-apiserver --secure-port=%q is not a port", f.Value)
			}
			port = p
		case "bind-address":
			// Probes must reach the API server where it listens: loopback
			// works for the wildcard addresses, not for a specific one.
			if ip := net.ParseIP(f.Value); ip != nil && !ip.IsUnspecified() {
				host = ip.String()
			}
		}
	}

	get := func(path string) httpGet {
		return httpGet{Host: host, Path: path, Port: port, Scheme: "HTTPS"}
	}
	// Probe settings follow kubeadm's, which are tuned for an API server
	// that waits for etcd on first boot.
	return build(Component{
		Name:      "kube-apiserver",
		Image:     Image + ":" + v.String(),
		Command:   command,
		Volumes:   volumes,
		CPU:       "250m",
		Liveness:  probe{HTTPGet: get("/livez"), InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 15, FailureThreshold: 8},
		Readiness: &probe{HTTPGet: get("/readyz"), PeriodSeconds: 1, TimeoutSeconds: 15, FailureThreshold: 3},
		Startup:   probe{HTTPGet: get("/livez"), InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 15, FailureThreshold: 24},
	})
}

// Component describes the static pod of a control-plane component that
// serves a health endpoint on the machine (kube-controller-manager,
// kube-scheduler): its image, its command (the images kube-aws runs have
// no entrypoint: the command names the binary), the host paths it mounts.
type Component struct {
	Name    string
	Image   string
	Command []string
	Volumes []construct.Volume
	// HealthPort and HealthPath are the HTTPS endpoint on 127.0.0.1 the
	// kubelet probes (--bind-address=127.0.0.1 keeps it off the network).
	HealthPort int
	HealthPath string
	// CPU is the container's CPU request.
	CPU string

	Liveness, Startup probe
	Readiness         *probe
}

// ComponentPod returns the static pod manifest of a control-plane
// component as YAML, with kubeadm's probe settings on its health endpoint.
func ComponentPod(c Component) ([]byte, error) {
	if c.Name == "" || c.Image == "" || len(c.Command) == 0 {
		return nil, fmt.Errorf("static pod %q: name, image and command are required", c.Name)
	}
	if c.HealthPort <= 0 || c.HealthPort > 65535 || c.HealthPath == "" {
		return nil, fmt.Errorf("static pod %s: health endpoint %d%s is not a port and path", c.Name, c.HealthPort, c.HealthPath)
	}
	for _, arg := range c.Command[1:] {
		if strings.HasSuffix(arg, "=") {
			return nil, fmt.Errorf("static pod %s: flag %s has an empty value", c.Name, arg)
		}
	}
	get := httpGet{Host: "127.0.0.1", Path: c.HealthPath, Port: c.HealthPort, Scheme: "HTTPS"}
	c.Liveness = probe{HTTPGet: get, InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 15, FailureThreshold: 8}
	c.Startup = probe{HTTPGet: get, InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 15, FailureThreshold: 24}
	c.Readiness = nil
	return build(c)
}

func build(c Component) ([]byte, error) {
	mounts, podVolumes, err := buildVolumes(c.Volumes)
	if err != nil {
		return nil, err
	}
	p := pod{
		APIVersion: "v1",
		Kind:       "Pod",
		Metadata: metadata{
			Name:      c.Name,
			Namespace: "kube-system",
			Labels:    map[string]string{"component": c.Name, "tier": "control-plane"},
		},
		Spec: podSpec{
			HostNetwork:       true,
			PriorityClassName: "system-node-critical",
			SecurityContext:   podSecurity{SeccompProfile: seccompProfile{Type: "RuntimeDefault"}},
			Containers: []container{{
				Name:            c.Name,
				Image:           c.Image,
				ImagePullPolicy: "IfNotPresent",
				Command:         c.Command,
				LivenessProbe:   c.Liveness,
				ReadinessProbe:  c.Readiness,
				StartupProbe:    c.Startup,
				Resources:       resources{Requests: map[string]string{"cpu": c.CPU}},
				VolumeMounts:    mounts,
			}},
			Volumes: podVolumes,
		},
	}
	return yaml.Marshal(p)
}

// buildVolumes sorts volumes by name and drops exact duplicates (two plugins
// asking for the same mount is agreement, not a conflict); the same name or
// mount path with a different meaning is an error, since the kubelet would
// refuse the pod on the node, long after render.
func buildVolumes(volumes []construct.Volume) ([]volumeMount, []podVolume, error) {
	sorted := append([]construct.Volume(nil), volumes...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	byName := map[string]construct.Volume{}
	byMount := map[string]string{}
	var mounts []volumeMount
	var vols []podVolume
	for _, v := range sorted {
		if v.Name == "" || v.HostPath == "" || v.MountPath == "" {
			return nil, nil, fmt.Errorf("kube-apiserver volume %+v: name, hostPath and mountPath are required", v)
		}
		if prev, ok := byName[v.Name]; ok {
			if prev == v {
				continue
			}
			return nil, nil, fmt.Errorf("kube-apiserver volume %q is defined twice: %s -> %s and %s -> %s",
				v.Name, prev.HostPath, prev.MountPath, v.HostPath, v.MountPath)
		}
		if other, ok := byMount[v.MountPath]; ok {
			return nil, nil, fmt.Errorf("kube-apiserver volumes %q and %q both mount at %s", other, v.Name, v.MountPath)
		}
		byName[v.Name] = v
		byMount[v.MountPath] = v.Name
		mounts = append(mounts, volumeMount{Name: v.Name, MountPath: v.MountPath, ReadOnly: v.ReadOnly})
		vols = append(vols, podVolume{Name: v.Name, HostPath: hostPathSpec{Path: v.HostPath, Type: hostPathType(v)}})
	}
	return mounts, vols, nil
}

// hostPathType lets the kubelet create writable directories (audit logs)
// but requires read-only ones (certificates) to exist, so a missing PKI
// folder fails the pod loudly instead of mounting an empty directory.
func hostPathType(v construct.Volume) string {
	if v.ReadOnly {
		return ""
	}
	return "DirectoryOrCreate"
}
