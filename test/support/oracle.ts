/**
 * The oracle of the pipeline tests: what every identity's packet must be, from
 * the pure reducer (differentially tested against loopx). Pure: the unit tier
 * imports it too.
 */
import {
  canonicalJson,
  contextOfObservation,
  emptyIdentityState,
  foldDelivery,
  projectIdentityState,
  reducerIdentity,
  type Observation,
  type ReducerContext,
} from "../../src/core/index.js";

/** What every identity's packet must be: the embedded reducer over its valid deliveries. */
export function expectedPackets(deliveries: readonly Observation[], reducerVersion = "memory_utility_reducer_v0"): Map<string, string> {
  const states = new Map<string, { context: ReducerContext; state: ReturnType<typeof emptyIdentityState> }>();
  for (const obs of deliveries) {
    const context = contextOfObservation(obs, reducerVersion);
    const id = reducerIdentity(context);
    let entry = states.get(id);
    if (entry === undefined) states.set(id, (entry = { context, state: emptyIdentityState() }));
    foldDelivery(entry.state, obs);
  }
  const out = new Map<string, string>();
  for (const [id, { context, state }] of states) out.set(id, canonicalJson(projectIdentityState(context, state)));
  return out;
}
