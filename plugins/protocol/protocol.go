// Package protocol is the one place that touches the generated gRPC code of
// plugins/proto/v1. It follows the pattern of hashicorp/go-plugin's
// examples/grpc: one Go interface (Plugin, and Host for the services kube-aws
// serves back), a gRPC client adapter used by kube-aws and a gRPC server
// adapter used by the SDK inside the plugin process, plus the conversions
// between proto messages and the core types (core/stage, core/construct,
// core/diag). Everything above this package speaks core types only, so a
// protocol version 2 is a second set of adapters, not a change to the host or
// to plugins.
package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

const (
	// MagicCookieKey and MagicCookieValue are go-plugin's handshake cookie: a
	// plugin started by anything but kube-aws refuses to run, and kube-aws
	// never mistakes an unrelated go-plugin binary for one of its plugins.
	MagicCookieKey   = "KUBE_AWS_PLUGIN"
	MagicCookieValue = "b3c1f5de-kube-aws-plugin"

	// PluginKey is the name under which the one plugin type is dispensed.
	PluginKey = "kube-aws"

	// PluginNameHeader is the gRPC metadata key that names the plugin a
	// call is for. An executable may serve several plugins from one
	// process (the built-ins do: one process instead of one each); it
	// routes every call by this header. A process serving one plugin
	// ignores it, so plugins built before it existed still work.
	PluginNameHeader = "kube-aws-plugin"

	// MaxMessageSize bounds a gRPC message in both directions. Rendered
	// stacks, charts and the whole construct set travel in single messages,
	// so the default 4 MiB is far too small.
	MaxMessageSize = 256 << 20
)

// Handshake is the go-plugin handshake shared by kube-aws and every plugin.
// ProtocolVersion is only the fallback for peers that do not negotiate;
// VersionedPlugins is what both sides really use.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  version.ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// SupportedVersions lists the protocol versions this build speaks.
var SupportedVersions = []int{version.ProtocolVersion}

// Host is what kube-aws serves back to a plugin over go-plugin's GRPCBroker:
// events and the plugin's persistent key-value store.
type Host interface {
	Emit(ev stage.Event) error
	StoreGet(key string) ([]byte, bool, error)
	StorePut(key string, value []byte) error
	StoreDelete(key string) error
	StoreList(prefix string) ([]string, error)
	// SecretGet and SecretPut reach the secrets kube-aws keeps for the
	// plugin (plugins/host.Credentials); SecretPut returns the marker.
	SecretGet(key string) ([]byte, bool, error)
	SecretPut(key string, value []byte) (string, error)
}

// Plugin is the Go face of the Plugin gRPC service. The SDK implements it
// inside the plugin process; the client adapter implements it for kube-aws.
type Plugin interface {
	// GetInfo asks the plugin to describe itself. protocolVersion is the
	// version go-plugin negotiated.
	GetInfo(ctx context.Context, protocolVersion int, hostVersion string) (stage.PluginInfo, error)
	// NotifyRegistration tells the plugin whether kube-aws accepted it.
	NotifyRegistration(ctx context.Context, reg stage.Registration) error
	// RunStage runs in.Stage, a stage or an operation (stage.Diff,
	// stage.Destroy). On the kube-aws side, host is served to the
	// plugin (it must be comparable, a pointer in practice, because one
	// broker service is kept per Host value rather than per call) and emit
	// receives the events the plugin streams. On the plugin side, host
	// reaches kube-aws and emit streams an event back; emit fails once
	// RunStage has returned.
	RunStage(ctx context.Context, in *stage.Input, host Host, emit func(stage.Event) error) (*stage.Result, error)
}

// ServerOptions are the gRPC server options both sides use.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize), serverCodec()}
}

// DialOptions are the gRPC dial options both sides use.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageSize),
		grpc.MaxCallSendMsgSize(MaxMessageSize),
		clientCodec(),
	)}
}

// NewGRPCServer is the ServeConfig.GRPCServer both sides use.
func NewGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, ServerOptions()...)...)
}

// GRPCPlugin is the go-plugin plugin.GRPCPlugin for kube-aws plugins. Inside
// the plugin process exactly one of Impl (one plugin) and Impls (several, by
// name) is set; both are left empty in kube-aws.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl  Plugin
	Impls map[string]Plugin
}

// ServerPlugins is ServeConfig.VersionedPlugins for a plugin process.
func ServerPlugins(impl Plugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{version.ProtocolVersion: {PluginKey: &GRPCPlugin{Impl: impl}}}
}

// ServerPluginsByName is ServeConfig.VersionedPlugins for a process that
// serves several plugins, each under its name.
func ServerPluginsByName(impls map[string]Plugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{version.ProtocolVersion: {PluginKey: &GRPCPlugin{Impls: impls}}}
}

// ClientPlugins is ClientConfig.VersionedPlugins for kube-aws.
func ClientPlugins() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{version.ProtocolVersion: {PluginKey: &GRPCPlugin{}}}
}

// GRPCServer registers the plugin side of the Plugin service: one service
// for the process, which routes each call to the plugin it names.
func (p *GRPCPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	newServer := func(impl Plugin) *pluginServer {
		return &pluginServer{impl: impl, broker: broker, hosts: map[uint32]*hostClient{}, calls: map[uint64]context.CancelFunc{}}
	}
	r := &router{byName: map[string]*pluginServer{}}
	switch {
	case p.Impl != nil && len(p.Impls) > 0:
		return errors.New("protocol.GRPCPlugin served with both Impl and Impls")
	case p.Impl != nil:
		r.only = newServer(p.Impl)
	case len(p.Impls) > 0:
		for name, impl := range p.Impls {
			if impl == nil {
				return fmt.Errorf("protocol.GRPCPlugin: plugin %q has no implementation", name)
			}
			r.byName[name] = newServer(impl)
			r.names = append(r.names, name)
		}
		slices.Sort(r.names)
	default:
		return errors.New("protocol.GRPCPlugin served without an Impl")
	}
	pb.RegisterPluginServer(s, r)
	return nil
}

// GRPCClient returns the kube-aws side of the Plugin service, a Plugin.
func (p *GRPCPlugin) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	return &pluginClient{client: pb.NewPluginClient(conn), conn: conn, broker: broker, done: ctx.Done()}, nil
}

// Dispense returns the plugin named name of a started go-plugin client.
// Every call it makes carries the name (PluginNameHeader), so that a
// process serving several plugins reaches the right one; dispense once per
// plugin of the process.
func Dispense(c *plugin.Client, name string) (Plugin, error) {
	rpc, err := c.Client()
	if err != nil {
		return nil, err
	}
	raw, err := rpc.Dispense(PluginKey)
	if err != nil {
		return nil, err
	}
	p, ok := raw.(*pluginClient)
	if !ok {
		return nil, fmt.Errorf("dispensed %T, not a kube-aws plugin client", raw)
	}
	p.name = name
	return p, nil
}

// ---- kube-aws side ----

type pluginClient struct {
	client pb.PluginClient
	// conn is the plugin process's connection, which every plugin
	// dispensed from it shares (requestFor sends it a stage's set once).
	conn   *grpc.ClientConn
	broker *plugin.GRPCBroker
	// name is sent with every call (PluginNameHeader).
	name string
	// done is closed when the plugin process has exited.
	done <-chan struct{}

	mu      sync.Mutex
	host    Host
	hostID  uint32
	serving sync.WaitGroup // background Accepts of the Host service
	// takesSetID: the process said it takes StageRequest.constructs_id.
	takesSetID bool
}

// named adds the plugin's name to a call's context.
func (c *pluginClient) named(ctx context.Context) context.Context {
	if c.name == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, PluginNameHeader, c.name)
}

func (c *pluginClient) GetInfo(ctx context.Context, protocolVersion int, hostVersion string) (stage.PluginInfo, error) {
	info, err := c.client.GetInfo(c.named(ctx), &pb.GetInfoRequest{ProtocolVersion: int32(protocolVersion), HostVersion: hostVersion})
	if err != nil {
		return stage.PluginInfo{}, err
	}
	c.mu.Lock()
	c.takesSetID = info.GetAcceptsConstructsId()
	c.mu.Unlock()
	return InfoFromPB(info), nil
}

// setConn is what requestFor knows the plugin's process by: its connection
// when the process takes constructs_id, else nil (every request carries
// the whole set).
func (c *pluginClient) setConn() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.takesSetID || c.conn == nil {
		return nil
	}
	return c.conn
}

func (c *pluginClient) NotifyRegistration(ctx context.Context, reg stage.Registration) error {
	_, err := c.client.NotifyRegistrationStatus(c.named(ctx), &pb.RegistrationStatus{Accepted: reg.Accepted, Reason: reg.Reason})
	return err
}

// serveHost serves h over the broker, once per Host value, and returns its
// broker id. Serving happens in the background, off the stage call's path:
// the plugin only dials when it first uses the store, and the broker hands
// it the address whenever that is. Serving starts only on the first stage
// call, so listing plugins (GetInfo only) never pays for it.
func (c *pluginClient) serveHost(h Host) uint32 {
	if h == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host != nil && c.host == h {
		return c.hostID
	}
	id := c.broker.NextId()
	c.serving.Add(1)
	go func() {
		// Not broker.AcceptAndServe: it logs through the standard logger
		// when the plugin is gone, which is no error here.
		ln, err := c.broker.Accept(id)
		c.serving.Done()
		if err != nil {
			return
		}
		s := NewGRPCServer(nil)
		pb.RegisterHostServer(s, &hostServer{impl: h})
		go func() {
			<-c.done
			s.Stop() // closes ln, which removes its socket file
		}()
		_ = s.Serve(ln)
	}()
	c.host, c.hostID = h, id
	return id
}

// settle waits (a bounded time) until background Accepts are done.
func (c *pluginClient) settle(max time.Duration) {
	done := make(chan struct{})
	go func() {
		c.serving.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(max):
	}
}

// Cancel asks the plugin to stop the stage calls it is serving (kube-aws was
// interrupted): their contexts are cancelled, and each call still ends
// with the plugin's result, so a plugin can undo or release what it holds
// (the deploy plugin releases its lock) before kube-aws kills it. A plugin
// built before the RPC existed answers Unimplemented; the caller then cuts
// the call itself.
func Cancel(ctx context.Context, p Plugin) error {
	c, ok := p.(*pluginClient)
	if !ok {
		return fmt.Errorf("cannot cancel a %T", p)
	}
	_, err := c.client.Cancel(c.named(ctx), &pb.CancelRequest{})
	return err
}

// Settle must be called before killing a plugin on the kube-aws side: it
// waits until the Host service's listener is set up. go-plugin's
// GRPCBroker.Accept leaks its socket file and descriptor when the broker
// closes between opening the listener and telling the plugin about it,
// which killing the plugin right after a quick stage call would cause.
func Settle(p Plugin) {
	if c, ok := p.(*pluginClient); ok {
		c.settle(2 * time.Second)
	}
}

func (c *pluginClient) RunStage(ctx context.Context, in *stage.Input, host Host, emit func(stage.Event) error) (*stage.Result, error) {
	if in == nil {
		return nil, errors.New("RunStage called with a nil input")
	}
	req, err := requestFor(in, c.serveHost(host), c.setConn())
	if err != nil {
		return nil, fmt.Errorf("encoding the input of stage %s: %w", in.Stage, err)
	}
	// Cancelling the call's context when we return releases the stream even
	// if we stop reading right after the result.
	ctx, cancel := context.WithCancel(c.named(ctx))
	defer cancel()
	var stream grpc.ServerStreamingClient[pb.StageEvent]
	switch in.Stage {
	case stage.Initialise:
		stream, err = c.client.Initialise(ctx, req)
	case stage.Render:
		stream, err = c.client.Render(ctx, req)
	case stage.Deploy:
		stream, err = c.client.Deploy(ctx, req)
	case stage.Validate:
		stream, err = c.client.Validate(ctx, req)
	case stage.Diff:
		stream, err = c.client.Diff(ctx, req)
	case stage.Destroy:
		stream, err = c.client.Destroy(ctx, req)
	case stage.AdminCredential:
		stream, err = c.client.AdminCredential(ctx, req)
	default:
		return nil, fmt.Errorf("unknown stage %q", in.Stage)
	}
	if err != nil {
		return nil, err
	}
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return nil, errors.New("the plugin ended the stage without sending a result")
		}
		if err != nil {
			return nil, err
		}
		switch p := ev.GetPayload().(type) {
		case *pb.StageEvent_Event:
			if emit != nil {
				if err := emit(EventFromPB(p.Event)); err != nil {
					return nil, err
				}
			}
		case *pb.StageEvent_Result:
			return ResultFromPB(p.Result), nil
		}
	}
}

type hostServer struct {
	pb.UnimplementedHostServer
	impl Host
}

func (s *hostServer) Emit(_ context.Context, ev *pb.Event) (*pb.Ack, error) {
	return &pb.Ack{}, s.impl.Emit(EventFromPB(ev))
}

func (s *hostServer) StoreGet(_ context.Context, k *pb.StoreKey) (*pb.StoreValue, error) {
	v, found, err := s.impl.StoreGet(k.GetKey())
	if err != nil {
		return nil, err
	}
	return &pb.StoreValue{Found: found, Value: v}, nil
}

func (s *hostServer) StorePut(_ context.Context, e *pb.StoreEntry) (*pb.Ack, error) {
	return &pb.Ack{}, s.impl.StorePut(e.GetKey(), e.GetValue())
}

func (s *hostServer) StoreDelete(_ context.Context, k *pb.StoreKey) (*pb.Ack, error) {
	return &pb.Ack{}, s.impl.StoreDelete(k.GetKey())
}

func (s *hostServer) StoreList(_ context.Context, r *pb.StoreListRequest) (*pb.StoreListResponse, error) {
	keys, err := s.impl.StoreList(r.GetPrefix())
	if err != nil {
		return nil, err
	}
	return &pb.StoreListResponse{Keys: keys}, nil
}

func (s *hostServer) SecretGet(_ context.Context, k *pb.StoreKey) (*pb.StoreValue, error) {
	v, found, err := s.impl.SecretGet(k.GetKey())
	if err != nil {
		return nil, err
	}
	return &pb.StoreValue{Found: found, Value: v}, nil
}

func (s *hostServer) SecretPut(_ context.Context, e *pb.StoreEntry) (*pb.SecretRef, error) {
	m, err := s.impl.SecretPut(e.GetKey(), e.GetValue())
	if err != nil {
		return nil, err
	}
	return &pb.SecretRef{Marker: m}, nil
}

// ---- plugin side ----

// router is the Plugin service of a plugin process: it hands each call to
// the plugin the call names, or to the process's only plugin.
type router struct {
	pb.UnimplementedPluginServer
	only   *pluginServer
	byName map[string]*pluginServer
	names  []string // sorted, for errors
}

func (r *router) target(ctx context.Context) (*pluginServer, error) {
	if r.only != nil {
		return r.only, nil
	}
	var name string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(PluginNameHeader); len(v) > 0 {
			name = v[0]
		}
	}
	if s, ok := r.byName[name]; ok {
		return s, nil
	}
	if name == "" {
		return nil, status.Errorf(codes.InvalidArgument, "this executable serves several plugins (%s); the call does not name one (kube-aws sends %q)", strings.Join(r.names, ", "), PluginNameHeader)
	}
	return nil, status.Errorf(codes.NotFound, "this executable serves the plugins %s, not %q", strings.Join(r.names, ", "), name)
}

func (r *router) GetInfo(ctx context.Context, req *pb.GetInfoRequest) (*pb.PluginInfo, error) {
	s, err := r.target(ctx)
	if err != nil {
		return nil, err
	}
	return s.GetInfo(ctx, req)
}

func (r *router) Cancel(ctx context.Context, req *pb.CancelRequest) (*pb.Ack, error) {
	s, err := r.target(ctx)
	if err != nil {
		return nil, err
	}
	return s.Cancel(ctx, req)
}

func (r *router) NotifyRegistrationStatus(ctx context.Context, st *pb.RegistrationStatus) (*pb.Ack, error) {
	s, err := r.target(ctx)
	if err != nil {
		return nil, err
	}
	return s.NotifyRegistrationStatus(ctx, st)
}

func (r *router) stream(name stage.Name, req *pb.StageRequest, stream grpc.ServerStreamingServer[pb.StageEvent]) error {
	s, err := r.target(stream.Context())
	if err != nil {
		return err
	}
	return s.run(name, req, stream)
}

func (r *router) Initialise(req *pb.StageRequest, stream pb.Plugin_InitialiseServer) error {
	return r.stream(stage.Initialise, req, stream)
}

func (r *router) Render(req *pb.StageRequest, stream pb.Plugin_RenderServer) error {
	return r.stream(stage.Render, req, stream)
}

func (r *router) Deploy(req *pb.StageRequest, stream pb.Plugin_DeployServer) error {
	return r.stream(stage.Deploy, req, stream)
}

func (r *router) Validate(req *pb.StageRequest, stream pb.Plugin_ValidateServer) error {
	return r.stream(stage.Validate, req, stream)
}

func (r *router) Diff(req *pb.StageRequest, stream pb.Plugin_DiffServer) error {
	return r.stream(stage.Diff, req, stream)
}

func (r *router) Destroy(req *pb.StageRequest, stream pb.Plugin_DestroyServer) error {
	return r.stream(stage.Destroy, req, stream)
}

func (r *router) AdminCredential(req *pb.StageRequest, stream pb.Plugin_AdminCredentialServer) error {
	return r.stream(stage.AdminCredential, req, stream)
}

// ErrStageOver is returned by emit once the stage has returned.
var ErrStageOver = errors.New("the stage has already returned; events can no longer be sent")

// pluginServer serves one plugin of the process.
type pluginServer struct {
	impl   Plugin
	broker *plugin.GRPCBroker

	mu    sync.Mutex
	hosts map[uint32]*hostClient
	// calls cancels each stage call in flight (Cancel), by call number.
	calls    map[uint64]context.CancelFunc
	lastCall uint64
}

func (s *pluginServer) GetInfo(ctx context.Context, req *pb.GetInfoRequest) (*pb.PluginInfo, error) {
	info, err := s.impl.GetInfo(ctx, int(req.GetProtocolVersion()), req.GetHostVersion())
	if err != nil {
		return nil, err
	}
	pi := InfoToPB(info)
	pi.AcceptsConstructsId = true // pluginServer.run resolves it
	return pi, nil
}

// Cancel cancels every stage call in flight; each still returns its result
// on its own stream.
func (s *pluginServer) Cancel(context.Context, *pb.CancelRequest) (*pb.Ack, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.calls {
		cancel()
	}
	return &pb.Ack{}, nil
}

func (s *pluginServer) NotifyRegistrationStatus(ctx context.Context, st *pb.RegistrationStatus) (*pb.Ack, error) {
	return &pb.Ack{}, s.impl.NotifyRegistration(ctx, stage.Registration{Accepted: st.GetAccepted(), Reason: st.GetReason()})
}

// hostFor returns the (lazily dialled) client of the Host service with the
// given broker id. go-plugin lets each id be dialled once, so it is cached.
func (s *pluginServer) hostFor(id uint32) Host {
	if id == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.hosts[id]
	if !ok {
		h = &hostClient{broker: s.broker, id: id}
		s.hosts[id] = h
	}
	return h
}

func (s *pluginServer) run(name stage.Name, req *pb.StageRequest, stream grpc.ServerStreamingServer[pb.StageEvent]) error {
	if err := resolveSet(stream.Context(), req); err != nil {
		return err
	}
	in, id := InputFromPB(req)
	// The RPC decides the stage, whatever the request says.
	in.Stage = name
	var (
		mu   sync.Mutex
		over bool
	)
	emit := func(ev stage.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if over {
			return ErrStageOver
		}
		return stream.Send(&pb.StageEvent{Payload: &pb.StageEvent_Event{Event: EventToPB(ev)}})
	}
	// The call's context ends when kube-aws cuts the stream, or when it
	// asks (Cancel) and waits for the result.
	ctx, cancel := context.WithCancel(stream.Context())
	s.mu.Lock()
	s.lastCall++
	key := s.lastCall
	s.calls[key] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.calls, key)
		s.mu.Unlock()
		cancel()
	}()
	res, err := s.impl.RunStage(ctx, in, s.hostFor(id), emit)
	mu.Lock()
	over = true
	mu.Unlock()
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Unknown, err.Error())
	}
	return stream.Send(&pb.StageEvent{Payload: &pb.StageEvent_Result{Result: ResultToPB(res)}})
}

// hostClient is the plugin's view of the Host service. It dials on first
// use, so a plugin that never touches the store never pays for a connection.
type hostClient struct {
	broker *plugin.GRPCBroker
	id     uint32

	once   sync.Once
	client pb.HostClient
	err    error
}

func (h *hostClient) get() (pb.HostClient, error) {
	h.once.Do(func() {
		conn, err := h.broker.DialWithOptions(h.id, DialOptions()...)
		if err != nil {
			h.err = fmt.Errorf("connecting to kube-aws host services: %w", err)
			return
		}
		h.client = pb.NewHostClient(conn)
	})
	return h.client, h.err
}

func (h *hostClient) Emit(ev stage.Event) error {
	c, err := h.get()
	if err != nil {
		return err
	}
	_, err = c.Emit(context.Background(), EventToPB(ev))
	return err
}

func (h *hostClient) StoreGet(key string) ([]byte, bool, error) {
	c, err := h.get()
	if err != nil {
		return nil, false, err
	}
	v, err := c.StoreGet(context.Background(), &pb.StoreKey{Key: key})
	if err != nil {
		return nil, false, err
	}
	return v.GetValue(), v.GetFound(), nil
}

func (h *hostClient) StorePut(key string, value []byte) error {
	c, err := h.get()
	if err != nil {
		return err
	}
	_, err = c.StorePut(context.Background(), &pb.StoreEntry{Key: key, Value: value})
	return err
}

func (h *hostClient) SecretGet(key string) ([]byte, bool, error) {
	c, err := h.get()
	if err != nil {
		return nil, false, err
	}
	v, err := c.SecretGet(context.Background(), &pb.StoreKey{Key: key})
	if err != nil {
		return nil, false, err
	}
	return v.GetValue(), v.GetFound(), nil
}

func (h *hostClient) SecretPut(key string, value []byte) (string, error) {
	c, err := h.get()
	if err != nil {
		return "", err
	}
	r, err := c.SecretPut(context.Background(), &pb.StoreEntry{Key: key, Value: value})
	if err != nil {
		return "", err
	}
	return r.GetMarker(), nil
}

func (h *hostClient) StoreDelete(key string) error {
	c, err := h.get()
	if err != nil {
		return err
	}
	_, err = c.StoreDelete(context.Background(), &pb.StoreKey{Key: key})
	return err
}

func (h *hostClient) StoreList(prefix string) ([]string, error) {
	c, err := h.get()
	if err != nil {
		return nil, err
	}
	r, err := c.StoreList(context.Background(), &pb.StoreListRequest{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	return r.GetKeys(), nil
}
