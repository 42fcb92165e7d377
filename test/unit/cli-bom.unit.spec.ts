/**
 * A UTF-8 BOM is data, as for the reference: Python's read_text("utf-8")
 * keeps it and json.loads refuses it ("Unexpected UTF-8 BOM (decode using
 * utf-8-sig)"). The CLI's file input and the fold's record values must see
 * it too, not drop it in the decoder.
 */
import { describe, expect, it } from "vitest";
import { inputText } from "../../src/cli/io.js";
import { utilityProjectOutput } from "../../src/cli/reward-memory.js";
import { decideRecord } from "../../src/fold/record-decision.js";
import { observationRecord } from "../../src/client/producer.js";
import { simulate } from "../../producers/simulation.js";

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** CPython 3.11's json.loads message for a str that starts with U+FEFF. */
const PYTHON_BOM_ERROR = "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)";
const OPTIONS = { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65536 };

const message = observationRecord([...simulate({ agents: 1, observationsPerAgent: 1, seed: 3 })][0]!.observation);
const key = Buffer.from(String(message.key), "utf8");
const value = Buffer.from(String(message.value), "utf8");

describe("decideRecord: a value that starts with a BOM", () => {
  it("goes to the DLQ as value_not_json with the reference's message, while the same bytes without it are accepted", () => {
    expect(decideRecord({ key, value, headers: message.headers }, OPTIONS).kind).toBe("accept");
    expect(decideRecord({ key, value: Buffer.concat([BOM, value]), headers: message.headers }, OPTIONS)).toEqual({
      kind: "reject",
      reason: "value_not_json",
      detail: PYTHON_BOM_ERROR,
    });
  });

  it("a BOM later in the value is not at the start: JSON sees a stray character", () => {
    const decision = decideRecord({ key, value: Buffer.concat([Buffer.from(" "), BOM, value]) }, OPTIONS);
    expect(decision).toMatchObject({ kind: "reject", reason: "value_not_json" });
    expect(decision.kind === "reject" && decision.detail).toBe("Expecting value: line 1 column 2 (char 1)");
  });

  it("a key with a BOM is not the scope key", () => {
    expect(decideRecord({ key: Buffer.concat([BOM, key]), value }, OPTIONS)).toMatchObject({ kind: "reject", reason: "key_scope_mismatch" });
  });
});

describe("utility-project: an input file that starts with a BOM", () => {
  it("is an invalid request (exit 2) with the reference's message, not a packet", () => {
    const request = Buffer.from(JSON.stringify({ observations: [], scope: { agent_id: "a", project_id: "p", corpus_id: "c", surface_id: "s" }, retrieval_snapshot_ref: "r", policy_snapshot_ref: "p" }));
    expect(utilityProjectOutput(request).exitCode).toBe(0);
    expect(utilityProjectOutput(Buffer.concat([BOM, request]))).toEqual({
      stdout: Buffer.from(`{"error":"${PYTHON_BOM_ERROR}","ok":false,"schema_version":"reward_memory_error_v0","status":"invalid_request"}\n`),
      stderr: "",
      exitCode: 2,
    });
  });

  it("inputText keeps the BOM and still reads universal newlines", () => {
    expect(inputText(Buffer.concat([BOM, Buffer.from("{}\r\n")]))).toBe("\ufeff{}\n");
    expect(() => inputText(Buffer.from([0xff, 0xfe, 0x7b, 0x00]))).toThrow("input is not valid UTF-8");
  });
});
