// The pause program of the air-gapped artifact folder's pause image
// (registry.k8s.io/pause:3.10.1). Its own module so that it builds like every
// other artifact: from a module folder, standard library only.
module github.com/kube-aws/kube-aws/release/artifacts/modules/pause

go 1.24
