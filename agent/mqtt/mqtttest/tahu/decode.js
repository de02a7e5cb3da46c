// decode.js reads Sparkplug B payloads, one base64 line each on stdin, and
// answers each with one JSON line on stdout, in order: {"payload": ...}
// with Eclipse Tahu's decoding (sparkplug-payload's decodePayload), or
// {"error": "..."} when Tahu cannot decode it. mqtt/mqtttest.StartTahu runs
// it as one long-lived process per test.
//
// Tahu's objects are passed on as Tahu makes them, with what JSON cannot
// carry spelled out: 64-bit integers (Long) as decimal strings, byte
// arrays as base64, non-finite floats as "NaN", "Infinity", "-Infinity".
// Beside Tahu's fields, each metric carries what Tahu's decoding hides:
// "datatype", the number on the wire (Tahu names it in "type"), and
// "valueField", the protobuf field of the value oneof that was set.
"use strict";

const readline = require("readline");
const Long = require("long");
const tahu = require("sparkplug-payload").get("spBv1.0");
const proto = require("sparkplug-payload/lib/sparkplugPayloadProto").org.eclipse.tahu.protobuf;

function plain(v) {
  if (v === undefined || v === null) return null;
  if (Long.isLong(v)) return v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === "object") {
    const out = {};
    for (const k of Object.keys(v)) out[k] = plain(v[k]);
    return out;
  }
  return v;
}

function decode(b) {
  const p = plain(tahu.decodePayload(b));
  const raw = proto.Payload.decode(b);
  (p.metrics || []).forEach((m, i) => {
    const r = raw.metrics[i];
    m.datatype = r.hasOwnProperty("datatype") ? r.datatype : null;
    m.valueField = r.value || null;
  });
  return p;
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let answer;
  try {
    answer = { payload: decode(Buffer.from(line.trim(), "base64")) };
  } catch (e) {
    answer = { error: String((e && e.message) || e) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
