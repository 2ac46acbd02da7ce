#!/usr/bin/env python3
"""Decodes TensorBoard event files without anything of Cohort's: the record framing (length, masked
CRC-32C of it, data, masked CRC-32C of the data) with a CRC-32C of its own, and the Event and
Summary messages built here from the field numbers of TensorBoard's published event.proto and
summary.proto through Debian's Python protobuf. Checks that the files hold the run:
    tensorboard_check.py TB_DIR METRICS_JSONL LAST_STEP EVAL_EVERY"""
import glob, json, math, os, struct, sys
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

tb_dir, metrics, last_step, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

def messages():
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="check_event.proto", package="check", syntax="proto3")
    summary = f.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL)
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".check.Summary.Value")
    event = f.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".check.Summary")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    factory = message_factory.MessageFactory(pool)
    return factory.GetPrototype(pool.FindMessageTypeByName("check.Event"))

Event = messages()

def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        assert at + 12 <= len(data), f"{path}: a torn header at byte {at}"
        head = data[at:at + 8]
        (length,) = struct.unpack("<Q", head)
        (crc,) = struct.unpack("<I", data[at + 8:at + 12])
        assert crc == masked(head), f"{path}: bad length CRC at byte {at}"
        body = data[at + 12:at + 12 + length]
        (crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        assert crc == masked(body), f"{path}: bad data CRC at byte {at}"
        event = Event()
        event.ParseFromString(body)
        yield event
        at += 16 + length

scalars = {}  # tag -> [(step, value)]
files = sorted(glob.glob(os.path.join(tb_dir, "events.out.tfevents.*")))
assert files, "no event files"
for path in files:
    events = list(records(path))
    assert events[0].file_version == "brain.Event:2", f"{path}: no file_version first"
    for event in events[1:]:
        assert event.wall_time > 1.6e9, event
        for v in event.summary.value:
            scalars.setdefault(v.tag, []).append((event.step, v.simple_value))

def steps(tag):
    return [s for s, _ in scalars.get(tag, [])]

assert steps("train/loss") == list(range(1, last_step + 1)), steps("train/loss")
loss = {}
for line in open(metrics):
    r = json.loads(line)
    if r.get("event") == "step":
        loss[r["step"]] = r["loss"]  # the last record of a step: the start that went on
for step, value in scalars["train/loss"]:
    assert math.isclose(value, loss[step], rel_tol=1e-6), (step, value, loss[step])
expected = list(range(every, last_step + 1, every))
for tag in ("eval/loss", "eval/accuracy", "summary/samples_per_s"):
    assert steps(tag) == expected, (tag, steps(tag))
for tag in ("train/lr", "train/samples_per_s", "train/step_s", "phase/forward_s", "phase/comm_s"):
    assert steps(tag) == list(range(1, last_step + 1)), (tag, steps(tag))
print(f"tensorboard_check: {len(files)} files, {sum(len(v) for v in scalars.values())} scalars, "
      f"tags {sorted(scalars)}")
