/*
Copyright The Helm Authors.
Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package chartutil

import (
	"fmt"
	"strconv"

	k8sversion "k8s.io/apimachinery/pkg/util/version"

	helmversion "helm.sh/helm/v3/internal/version"
)

var (
	// The Kubernetes version can be set by LDFLAGS. In order to do that the value
	// must be a string.
	k8sVersionMajor = "1"
	k8sVersionMinor = "20"

	// DefaultVersionSet is the default version set, which includes only Core V1 ("v1").
	DefaultVersionSet = allKnownVersions()

	// DefaultCapabilities is the default set of capabilities.
	DefaultCapabilities = &Capabilities{
		KubeVersion: KubeVersion{
			Version: fmt.Sprintf("v%s.%s.0", k8sVersionMajor, k8sVersionMinor),
			Major:   k8sVersionMajor,
			Minor:   k8sVersionMinor,
		},
		APIVersions: DefaultVersionSet,
		HelmVersion: helmversion.Get(),
	}
)

// Capabilities describes the capabilities of the Kubernetes cluster.
type Capabilities struct {
	// KubeVersion is the Kubernetes version.
	KubeVersion KubeVersion
	// APIVersions are supported Kubernetes API versions.
	APIVersions VersionSet
	// HelmVersion is the build information for this helm version
	HelmVersion helmversion.BuildInfo
}

func (capabilities *Capabilities) Copy() *Capabilities {
	return &Capabilities{
		KubeVersion: capabilities.KubeVersion,
		APIVersions: capabilities.APIVersions,
		HelmVersion: capabilities.HelmVersion,
	}
}

// KubeVersion is the Kubernetes version.
type KubeVersion struct {
	Version string // Kubernetes version
	Major   string // Kubernetes major version
	Minor   string // Kubernetes minor version
}

// String implements fmt.Stringer
func (kv *KubeVersion) String() string { return kv.Version }

// GitVersion returns the Kubernetes version string.
//
// Deprecated: use KubeVersion.Version.
func (kv *KubeVersion) GitVersion() string { return kv.Version }

// ParseKubeVersion parses kubernetes version from string
func ParseKubeVersion(version string) (*KubeVersion, error) {
	// Based on the original k8s version parser.
	// https://github.com/kubernetes/kubernetes/blob/b266ac2c3e42c2c4843f81e20213d2b2f43e450a/staging/src/k8s.io/apimachinery/pkg/util/version/version.go#L137
	sv, err := k8sversion.ParseGeneric(version)
	if err != nil {
		return nil, err
	}
	return &KubeVersion{
		Version: "v" + sv.String(),
		Major:   strconv.FormatUint(uint64(sv.Major()), 10),
		Minor:   strconv.FormatUint(uint64(sv.Minor()), 10),
	}, nil
}

// VersionSet is a set of Kubernetes API versions.
type VersionSet []string

// Has returns true if the version string is in the set.
//
//	vs.Has("apps/v1")
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

// allKnownVersions returns the group versions of client-go's scheme with the
// extension APIs registered, in the scheme's order of priority: the list the
// release computes at package init from k8s.io/client-go/kubernetes/scheme,
// written out so that the package does not import the scheme and every
// k8s.io/api group with it (kube-aws: its test compares the two).
func allKnownVersions() VersionSet {
	return VersionSet{
		"v1",
		"admissionregistration.k8s.io/v1",
		"admissionregistration.k8s.io/v1alpha1",
		"admissionregistration.k8s.io/v1beta1",
		"internal.apiserver.k8s.io/v1alpha1",
		"apps/v1",
		"apps/v1beta1",
		"apps/v1beta2",
		"authentication.k8s.io/v1",
		"authentication.k8s.io/v1alpha1",
		"authentication.k8s.io/v1beta1",
		"authorization.k8s.io/v1",
		"authorization.k8s.io/v1beta1",
		"autoscaling/v1",
		"autoscaling/v2",
		"batch/v1",
		"batch/v1beta1",
		"certificates.k8s.io/v1",
		"certificates.k8s.io/v1beta1",
		"certificates.k8s.io/v1alpha1",
		"coordination.k8s.io/v1alpha2",
		"coordination.k8s.io/v1beta1",
		"coordination.k8s.io/v1",
		"discovery.k8s.io/v1",
		"discovery.k8s.io/v1beta1",
		"events.k8s.io/v1",
		"events.k8s.io/v1beta1",
		"extensions/v1beta1",
		"flowcontrol.apiserver.k8s.io/v1",
		"flowcontrol.apiserver.k8s.io/v1beta1",
		"flowcontrol.apiserver.k8s.io/v1beta2",
		"flowcontrol.apiserver.k8s.io/v1beta3",
		"lifecycle.k8s.io/v1alpha1",
		"networking.k8s.io/v1",
		"networking.k8s.io/v1beta1",
		"node.k8s.io/v1",
		"node.k8s.io/v1alpha1",
		"node.k8s.io/v1beta1",
		"policy/v1",
		"policy/v1beta1",
		"rbac.authorization.k8s.io/v1",
		"rbac.authorization.k8s.io/v1beta1",
		"rbac.authorization.k8s.io/v1alpha1",
		"resource.k8s.io/v1",
		"resource.k8s.io/v1beta2",
		"resource.k8s.io/v1beta1",
		"resource.k8s.io/v1alpha3",
		"scheduling.k8s.io/v1alpha3",
		"scheduling.k8s.io/v1beta1",
		"scheduling.k8s.io/v1",
		"storage.k8s.io/v1beta1",
		"storage.k8s.io/v1",
		"storage.k8s.io/v1alpha1",
		"storagemigration.k8s.io/v1",
		"storagemigration.k8s.io/v1beta1",
		"apiextensions.k8s.io/v1beta1",
		"apiextensions.k8s.io/v1",
	}
}
