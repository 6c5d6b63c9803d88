package protocol

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

// sharedSet is the construct set of the last stage input sent, encoded once
// for every plugin the stage calls. Every plugin of a stage receives the
// same set (the stages hand one Input to all of them), and the set is by far
// the largest part of a stage's input: converting and encoding it once per
// plugin, ten times over for the built-ins, cost kube-aws more than all the
// rest of sending the input. The set is kept (not only its address) so that
// no other set can take its address while it is here.
var sharedSet struct {
	mu  sync.Mutex
	set *construct.Set
	// field is the set as the StageRequest's constructs field: its tag,
	// length and encoding.
	field []byte
}

// requestToPB is InputToPB for sending: the construct set is not converted
// into the request but carried in its unknown fields, already encoded as
// field constructs (5). Protobuf writes unknown fields as they are after
// the known ones, and the order of fields on the wire is free, so the
// plugin decodes exactly the request InputToPB would have made.
//
// A set handed to RunStage must not change afterwards: a later call with
// the same set sends the encoding made for the first.
func requestToPB(in *stage.Input, hostServiceID uint32) (*pb.StageRequest, error) {
	if in == nil || in.Constructs == nil {
		return InputToPB(in, hostServiceID), nil
	}
	field, err := setField(in.Constructs)
	if err != nil {
		return nil, err
	}
	bare := *in
	bare.Constructs = nil
	req := InputToPB(&bare, hostServiceID)
	req.ProtoReflect().SetUnknown(field)
	return req, nil
}

// setField returns set encoded as the constructs field of a StageRequest.
func setField(set *construct.Set) ([]byte, error) {
	sharedSet.mu.Lock()
	defer sharedSet.mu.Unlock()
	if sharedSet.set == set {
		return sharedSet.field, nil
	}
	b, err := proto.Marshal(SetToPB(set))
	if err != nil {
		return nil, err
	}
	field := protowire.AppendTag(nil, constructsField, protowire.BytesType)
	field = protowire.AppendBytes(field, b)
	sharedSet.set, sharedSet.field = set, field
	return field, nil
}

// constructsField is the number of StageRequest's constructs field.
var constructsField = (&pb.StageRequest{}).ProtoReflect().Descriptor().Fields().ByName("constructs").Number()
