/** The Kafka record key of an observation: `agent/project/corpus/surface`, unambiguous because refs cannot hold `/`. */
import type { Scope } from "../core/index.js";

export function scopeKey(scope: Scope): string {
  return `${scope.agent_id}/${scope.project_id}/${scope.corpus_id}/${scope.surface_id}`;
}

export function parseScopeKey(key: string): Scope | null {
  const parts = key.split("/");
  if (parts.length !== 4 || parts.some((p) => p === "")) return null;
  const [agent_id, project_id, corpus_id, surface_id] = parts as [string, string, string, string];
  return { agent_id, project_id, corpus_id, surface_id };
}
