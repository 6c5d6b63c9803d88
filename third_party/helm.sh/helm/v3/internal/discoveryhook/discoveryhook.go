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

// Package discoveryhook lets pkg/engine's lookup function ask a cluster for
// its API resources without importing client-go's discovery package, whose
// dependencies (every k8s.io/api group and client-go's scheme) cost every
// process that renders charts offline their package init. Added by kube-aws.
package discoveryhook

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// ServerResourcesForGroupVersion returns the API resources a cluster serves
// for a group version. internal/discoveryhook/client sets it, and
// pkg/action imports that package.
var ServerResourcesForGroupVersion func(config *rest.Config, groupVersion string) (*metav1.APIResourceList, error)
