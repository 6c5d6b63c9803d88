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

// Package client sets discoveryhook.ServerResourcesForGroupVersion to
// client-go's discovery client. Added by kube-aws.
package client

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"helm.sh/helm/v3/internal/discoveryhook"
)

func init() {
	discoveryhook.ServerResourcesForGroupVersion = func(config *rest.Config, groupVersion string) (*metav1.APIResourceList, error) {
		discoveryClient, err := discovery.NewDiscoveryClientForConfig(config)
		if err != nil {
			return nil, err
		}
		return discoveryClient.ServerResourcesForGroupVersion(groupVersion)
	}
}
