// Command badproto is a test plugin that only speaks plugin protocol version
// 99, which no kube-aws speaks. It uses go-plugin directly because the SDK
// always speaks the versions of the kube-aws it was built with.
package main

import (
	"context"
	"errors"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/protocol"
)

type impl struct{}

func (impl) GetInfo(context.Context, int, string) (stage.PluginInfo, error) {
	return stage.PluginInfo{Name: "badproto", Version: "0.0.1", ProtocolVersions: []int{99}}, nil
}
func (impl) NotifyRegistration(context.Context, stage.Registration) error { return nil }
func (impl) RunStage(context.Context, *stage.Input, protocol.Host, func(stage.Event) error) (*stage.Result, error) {
	return nil, errors.New("unreachable")
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			99: {protocol.PluginKey: &protocol.GRPCPlugin{Impl: impl{}}},
		},
		GRPCServer: protocol.NewGRPCServer,
	})
}
