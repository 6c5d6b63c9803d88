// Command bare is a minimal plugin written against hashicorp/go-plugin and
// the generated gRPC code directly, without the SDK or plugins/protocol. The
// benchmarks launch it to measure go-plugin's own floor (launch, handshake,
// one RPC, kill) so that the SDK and host can be compared with it.
package main

import (
	"context"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

type server struct {
	pb.UnimplementedPluginServer
}

func (server) GetInfo(context.Context, *pb.GetInfoRequest) (*pb.PluginInfo, error) {
	return &pb.PluginInfo{Name: "bare", Version: "0.0.1", ProtocolVersions: []int32{1}}, nil
}

type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

func (grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPluginServer(s, server{})
	return nil
}

func (grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return pb.NewPluginClient(c), nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			ProtocolVersion:  1,
			MagicCookieKey:   "KUBE_AWS_PLUGIN",
			MagicCookieValue: "b3c1f5de-kube-aws-plugin",
		},
		Plugins:    plugin.PluginSet{"kube-aws": grpcPlugin{}},
		GRPCServer: plugin.DefaultGRPCServer,
		// go-plugin's default logger writes JSON at trace level to stderr;
		// a quiet one is the fair floor to compare the SDK against.
		Logger: hclog.NewNullLogger(),
	})
}
