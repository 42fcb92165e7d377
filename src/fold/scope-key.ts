/** The Kafka record key of an observation: `agent/project/corpus/surface`, unambiguous because refs cannot hold `/`. */
import type { Scope } from "../core/index.js";

export function scopeKey(scope: Scope): string {
  return `${scope.agent_id}/${scope.project_id}/${scope.corpus_id}/${scope.surface_id}`;
}
