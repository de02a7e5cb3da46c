package mqtttest

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// SparkplugMetric is a decoded Payload.Metric.
type SparkplugMetric struct {
	Name       string
	HasName    bool
	Alias      uint64
	HasAlias   bool
	Timestamp  uint64
	DataType   uint32
	Historical bool
	Null       bool
	// Value is the set member of the value oneof: uint32 (int_value),
	// uint64 (long_value), float32, float64, bool or string; nil if none.
	Value any
}

// SparkplugPayload is a decoded Sparkplug B Payload.
type SparkplugPayload struct {
	Timestamp uint64
	Seq       uint64
	HasSeq    bool
	Metrics   []SparkplugMetric
}

var (
	schemaOnce sync.Once
	schema     protoreflect.MessageDescriptor
	schemaErr  error
)

// PayloadDescriptor returns the descriptor of the Sparkplug B message
// Payload (package org.eclipse.tahu.protobuf, proto2) with the fields an
// edge node's messages use: the field numbers and types of the Sparkplug
// B specification, built with descriptorpb so that the protobuf runtime,
// not our own decoder, reads what the publisher wrote.
func PayloadDescriptor() (protoreflect.MessageDescriptor, error) {
	schemaOnce.Do(func() { schema, schemaErr = buildSchema() })
	return schema, schemaErr
}

func buildSchema() (protoreflect.MessageDescriptor, error) {
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, label *descriptorpb.FieldDescriptorProto_Label, oneof *int32) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label, OneofIndex: oneof}
	}
	value := proto.Int32(0)
	metric := &descriptorpb.DescriptorProto{
		Name: proto.String("Metric"),
		Field: []*descriptorpb.FieldDescriptorProto{
			field("name", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, nil),
			field("alias", 2, descriptorpb.FieldDescriptorProto_TYPE_UINT64, opt, nil),
			field("timestamp", 3, descriptorpb.FieldDescriptorProto_TYPE_UINT64, opt, nil),
			field("datatype", 4, descriptorpb.FieldDescriptorProto_TYPE_UINT32, opt, nil),
			field("is_historical", 5, descriptorpb.FieldDescriptorProto_TYPE_BOOL, opt, nil),
			field("is_transient", 6, descriptorpb.FieldDescriptorProto_TYPE_BOOL, opt, nil),
			field("is_null", 7, descriptorpb.FieldDescriptorProto_TYPE_BOOL, opt, nil),
			field("int_value", 10, descriptorpb.FieldDescriptorProto_TYPE_UINT32, opt, value),
			field("long_value", 11, descriptorpb.FieldDescriptorProto_TYPE_UINT64, opt, value),
			field("float_value", 12, descriptorpb.FieldDescriptorProto_TYPE_FLOAT, opt, value),
			field("double_value", 13, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, opt, value),
			field("boolean_value", 14, descriptorpb.FieldDescriptorProto_TYPE_BOOL, opt, value),
			field("string_value", 15, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, value),
			field("bytes_value", 16, descriptorpb.FieldDescriptorProto_TYPE_BYTES, opt, value),
		},
		OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("value")}},
	}
	metrics := field("metrics", 2, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, rep, nil)
	metrics.TypeName = proto.String(".org.eclipse.tahu.protobuf.Payload.Metric")
	file := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("sparkplug_b_subset.proto"),
		Package: proto.String("org.eclipse.tahu.protobuf"),
		Syntax:  proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Payload"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("timestamp", 1, descriptorpb.FieldDescriptorProto_TYPE_UINT64, opt, nil),
				metrics,
				field("seq", 3, descriptorpb.FieldDescriptorProto_TYPE_UINT64, opt, nil),
				field("uuid", 4, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, nil),
				field("body", 5, descriptorpb.FieldDescriptorProto_TYPE_BYTES, opt, nil),
			},
			NestedType: []*descriptorpb.DescriptorProto{metric},
		}},
	}
	fd, err := protodesc.NewFile(file, nil)
	if err != nil {
		return nil, fmt.Errorf("sparkplug schema: %w", err)
	}
	return fd.Messages().ByName("Payload"), nil
}

// DecodeSparkplug decodes b with the protobuf runtime into a
// SparkplugPayload.
func DecodeSparkplug(b []byte) (SparkplugPayload, error) {
	md, err := PayloadDescriptor()
	if err != nil {
		return SparkplugPayload{}, err
	}
	msg := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(b, msg); err != nil {
		return SparkplugPayload{}, fmt.Errorf("sparkplug payload: %w", err)
	}
	fields := md.Fields()
	var p SparkplugPayload
	p.Timestamp = msg.Get(fields.ByName("timestamp")).Uint()
	if f := fields.ByName("seq"); msg.Has(f) {
		p.Seq, p.HasSeq = msg.Get(f).Uint(), true
	}
	list := msg.Get(fields.ByName("metrics")).List()
	mfields := md.Messages().ByName("Metric").Fields()
	for i := range list.Len() {
		m := list.Get(i).Message()
		var sm SparkplugMetric
		if f := mfields.ByName("name"); m.Has(f) {
			sm.Name, sm.HasName = m.Get(f).String(), true
		}
		if f := mfields.ByName("alias"); m.Has(f) {
			sm.Alias, sm.HasAlias = m.Get(f).Uint(), true
		}
		sm.Timestamp = m.Get(mfields.ByName("timestamp")).Uint()
		sm.DataType = uint32(m.Get(mfields.ByName("datatype")).Uint())
		sm.Historical = m.Get(mfields.ByName("is_historical")).Bool()
		sm.Null = m.Get(mfields.ByName("is_null")).Bool()
		if f := m.WhichOneof(mfields.ByName("int_value").ContainingOneof()); f != nil {
			v := m.Get(f)
			switch f.Name() {
			case "int_value":
				sm.Value = uint32(v.Uint())
			case "long_value":
				sm.Value = v.Uint()
			case "float_value":
				sm.Value = float32(v.Float())
			case "double_value":
				sm.Value = v.Float()
			case "boolean_value":
				sm.Value = v.Bool()
			case "string_value":
				sm.Value = v.String()
			case "bytes_value":
				sm.Value = v.Bytes()
			}
		}
		p.Metrics = append(p.Metrics, sm)
	}
	return p, nil
}
