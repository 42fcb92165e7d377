/** GET /v1/projections/{identity}/subjects/{subject_id}: one subject object of the packet, as canonical JSON, with an ETag. */
import { canonicalJson, isPyObject, parsePyJson, type PyObject } from "../../core/index.js";
import { OPAQUE_REF_RE } from "../../core/fields.js";
import type { ProjectionSource } from "../projection-source.js";
import { taggedReply, HttpError, type Reply } from "../reply.js";
import { checkIdentity, type RequestContext } from "../request.js";

export interface SubjectDeps {
  source: ProjectionSource;
}

export async function subject({ params: [identity, subjectId], headers }: RequestContext, { source }: SubjectDeps): Promise<Reply> {
  checkIdentity(identity!);
  if (!OPAQUE_REF_RE.test(subjectId!)) throw new HttpError(400, "malformed_subject_id", `subject_id must match ${OPAQUE_REF_RE.source}`);
  const packet = parsePyJson(await source.packet(identity!));
  const subjects = isPyObject(packet) ? packet.subjects : undefined;
  const found = Array.isArray(subjects) ? subjects.find((s): s is PyObject => isPyObject(s) && s.subject_id === subjectId) : undefined;
  if (found === undefined) throw new HttpError(404, "unknown_subject", `identity ${identity} has no subject ${subjectId}`, { identity, subject_id: subjectId });
  return taggedReply(headers, Buffer.from(canonicalJson(found), "utf8"));
}
