/**
 * The change feed: every change the fold applies to an identity is appended
 * to a capped Redis Stream, `<prefix>:g<N>:changes` (one per generation), with
 * the fields identity, version, status, digest (the content digest of the
 * stored parts, docs/architecture.md "Change feed"; also in the identity's
 * meta hash as `dig`) and deliveries (applied in
 * this change). Review proposals that a change adds, alters or withdraws are
 * optionally produced to a Kafka topic, keyed by identity, for a host to
 * decide on. They are proposals only: nothing in mufold acts on them.
 *
 * Delivery is at least once. The stream lives in another hash slot than the
 * identity, so its XADD follows the atomic apply: the batch's seal appends the
 * entries (on one node in the same call, before the mark moves past the batch;
 * on a cluster just before it), and the commit follows. If the worker dies
 * after the applies and before the seal, the batch is redelivered, the
 * watermarks skip the apply, and the freshly loaded identity announces its
 * stored change again from the meta hash (`chg`, `dig`), flagged `repeated`.
 * So an entry can repeat (after a crash, a failed publish or a rebalance) and,
 * when two workers write one identity, two entries can arrive out of version
 * order: followers keep, per identity, the highest version seen and ignore
 * entries at or below it. The stream is trimmed approximately (MAXLEN ~), so a
 * follower that falls behind the cap resynchronizes from the packets (or the
 * meta `dig`) of the generation's identities.
 */
import type { OutMessage, ReliableProducer } from "../../src/adapters/kafka/producer.js";
import type { Settings } from "../../src/config/settings.js";
import { canonicalJson } from "../../src/core/canonical-json.js";
import { MufoldError } from "../../src/errors.js";
import type { ChangeEntries } from "../../src/fold/control-store.js";
import type { FeedChange, ProposalChange } from "../../src/fold/identity-applier.js";

/** The change feed as the fold and the replay use it: the registry's settings (src/config/settings.ts), validated there. */
export interface ChangeFeedSettings {
  /** changeFeed (MUFOLD_CHANGE_FEED): digests, the stream and proposals. */
  enabled: boolean;
  /** changeFeedMaxLen (MUFOLD_CHANGE_FEED_MAXLEN): approximate cap of each generation's stream. */
  maxLen: number;
  /** proposalsTopic (MUFOLD_PROPOSALS_TOPIC): Kafka topic for review proposals; null = none. */
  proposalsTopic: string | null;
}

/** The schema header and `schema_version` of a proposal message. */
export const PROPOSAL_SCHEMA = "mufold_review_proposal_v0";

/** The change-feed part of resolved settings. */
export function changeFeedSettings(settings: Pick<Settings, "changeFeed" | "changeFeedMaxLen" | "proposalsTopic">): ChangeFeedSettings {
  return { enabled: settings.changeFeed, maxLen: settings.changeFeedMaxLen, proposalsTopic: settings.proposalsTopic };
}

/** The stream entry of a change: field, value pairs. */
export function changeEntryFields(change: FeedChange): string[] {
  const fields = [
    "identity", change.identity,
    "version", String(change.version),
    "status", change.status,
    "digest", change.digest,
    "deliveries", String(change.deliveries),
  ];
  if (change.repeated) fields.push("repeated", "1");
  return fields;
}

/**
 * A proposal message value, canonical JSON: `{digest, generation, identity,
 * proposal, schema_version, subject_id, version}` where `proposal` is the
 * proposal exactly as the packet holds it, or null when the subject's proposal
 * was withdrawn (the subject no longer needs review, or the packet is rejected).
 */
export function proposalValue(generation: number, change: FeedChange, p: ProposalChange): string {
  return (
    `{"digest":${canonicalJson(change.digest)},"generation":${generation},"identity":${canonicalJson(change.identity)},` +
    `"proposal":${p.proposal ?? "null"},"schema_version":${canonicalJson(PROPOSAL_SCHEMA)},` +
    `"subject_id":${canonicalJson(p.subjectId)},"version":${change.version}}`
  );
}

export function proposalMessages(generation: number, changes: readonly FeedChange[]): OutMessage[] {
  const out: OutMessage[] = [];
  for (const change of changes) {
    for (const p of change.proposals) {
      out.push({
        key: change.identity,
        value: proposalValue(generation, change, p),
        headers: { schema: PROPOSAL_SCHEMA, "content-type": "application/json" },
      });
    }
  }
  return out;
}

export class ChangeFeed {
  constructor(
    readonly settings: ChangeFeedSettings,
    private readonly producer: ReliableProducer | undefined,
  ) {
    if (settings.proposalsTopic !== null && producer === undefined) throw new MufoldError("the proposals topic needs a producer");
  }

  /** Produce the proposals of a batch's changes (with a proposals topic), before its seal: a batch sealed is never redelivered. */
  async propose(generation: number, changes: readonly FeedChange[]): Promise<number> {
    const topic = this.settings.proposalsTopic;
    if (!this.settings.enabled || topic === null) return 0;
    const messages = proposalMessages(generation, changes);
    if (messages.length > 0) await this.producer!.send(topic, messages);
    return messages.length;
  }

  /** A batch's stream entries, for its seal to append (ControlStore.seal); none with the feed off. */
  entries(changes: readonly FeedChange[]): ChangeEntries | undefined {
    if (!this.settings.enabled || changes.length === 0) return undefined;
    return { maxLen: this.settings.maxLen, entries: changes.map(changeEntryFields) };
  }
}
