#!lua name=mufold_v1
--[[
mufold Redis Function library, version 1.

Every function takes the ten keys of one reducer identity, all sharing the
hash tag {mur_...} (see src/fold/keys.ts):
  KEYS[1] m   meta hash        KEYS[6]  hi  history order (zset, score 0)
  KEYS[2] d   delivery records KEYS[7]  hl  subject -> latest history member
  KEYS[3] s   subject parts    KEYS[8]  c   conflict parts
  KEYS[4] si  subject order    KEYS[9]  ci  conflict order (zset of ids)
  KEYS[5] h   history parts    KEYS[10] p   review proposal parts

mufold_read_v1 (read-only, FCALL_RO)
  ARGV: none
  Returns the packet as canonical JSON, or nil when the identity has no state.
  Fragments are stored with object keys and enumerated values as two-byte
  tokens (\2 or \3 and a character, src/core/compact-json.ts); the reply has
  them expanded.

mufold_apply_v1
  ARGV[1]  expected version ("0" when the identity is new)
  ARGV[2]  k, the number of watermark pairs that follow
  ARGV[3 .. 2+2k]  field, offset pairs ("w:<topic>:<partition>", offset)
  then ops, four arguments each: opcode, key index (1..10), field/member, value
    opcodes: HSET, HDEL, ZADD (score 0), ZREM, DEL
  Returns {code, version}:
     1  applied; version is the new version
    -1  stale: the stored version differs; version is the stored one
    -2  state lost: a version was expected but the identity has no meta
]]

local SEP = '\1'
-- Token (\2 or \3 and a character) -> the canonical text it stands for (compact-json.ts EXPANSION).
local EXPANSION = {
  ['\002!'] = '"accepted_observation_count":', ['\002"'] = '"action_authority_granted":',
  ['\002#'] = '"agent_id":', ['\002$'] = '"application_receipt_id":', ['\002%'] = '"attribution_level":',
  ['\002&'] = '"automatic_deletion":', ['\002\''] = '"combined_confidence":', ['\002('] = '"confidence":',
  ['\002)'] = '"conflicting_observation_count":', ['\002*'] = '"controlled_replay":',
  ['\002+'] = '"corpus_id":', ['\002,'] = '"created_at":', ['\002-'] = '"delivery_count":',
  ['\002.'] = '"delivery_fingerprints":', ['\002/'] = '"delivery_fingerprints_truncated":',
  ['\0020'] = '"deterministic_effect":', ['\0021'] = '"duplicate_observation_count":',
  ['\0022'] = '"effective_evidence_basis":', ['\0023'] = '"effective_utility_label":',
  ['\0024'] = '"evaluation_version":', ['\0025'] = '"evaluator_inference":', ['\0026'] = '"evaluator_ref":',
  ['\0027'] = '"evidence_basis":', ['\0028'] = '"evidence_label_summary":', ['\0029'] = '"evidence_refs":',
  ['\002:'] = '"evidence_strength":', ['\002;'] = '"external_writes_performed":',
  ['\002<'] = '"grants_new_action_authority":', ['\002='] = '"harmful":', ['\002>'] = '"helpful":',
  ['\002?'] = '"insufficient":', ['\002@'] = '"item_subject_count":', ['\002A'] = '"last_observation_id":',
  ['\002B'] = '"last_observed_at":', ['\002C'] = '"lineage_observation_count":', ['\002D'] = '"max":',
  ['\002E'] = '"memory_ref_digests":', ['\002F'] = '"min":', ['\002G'] = '"neutral":',
  ['\002H'] = '"observation_count":', ['\002I'] = '"observation_fingerprint":',
  ['\002J'] = '"observation_history":', ['\002K'] = '"observation_history_truncated":',
  ['\002L'] = '"observation_id":', ['\002M'] = '"ok":', ['\002N'] = '"outcome_ref":',
  ['\002O'] = '"owner_correction":', ['\002P'] = '"policy_snapshot_ref":', ['\002Q'] = '"project_id":',
  ['\002R'] = '"projection_ready":', ['\002S'] = '"proposed_action":',
  ['\002T'] = '"provider_write_performed":', ['\002U'] = '"quarantine_proposed":',
  ['\002V'] = '"raw_content_captured":', ['\002W'] = '"read_only":', ['\002X'] = '"reason_codes":',
  ['\002Y'] = '"reducer_identity":', ['\002Z'] = '"reducer_version":',
  ['\002['] = '"rejected_observation_count":', ['\002\\'] = '"rejections":',
  ['\002]'] = '"retrieval_snapshot_ref":', ['\002^'] = '"review":', ['\002_'] = '"review_proposals":',
  ['\002`'] = '"schema_version":', ['\002a'] = '"scope":', ['\002b'] = '"set_subject_count":',
  ['\002c'] = '"state":', ['\002d'] = '"status":', ['\002e'] = '"subject_count":', ['\002f'] = '"subject_id":',
  ['\002g'] = '"subjects":', ['\002h'] = '"support":', ['\002i'] = '"surface_id":',
  ['\002j'] = '"uncertainty":', ['\002k'] = '"unknown":', ['\002l'] = '"unresolved_lineage_count":',
  ['\002m'] = '"utility_bounds":', ['\002n'] = '"utility_estimate":', ['\002o'] = '"utility_label":',
  ['\003!'] = 'false', ['\003"'] = 'true', ['\003#'] = '"helpful"', ['\003$'] = '"harmful"',
  ['\003%'] = '"neutral"', ['\003&'] = '"unknown"', ['\003\''] = '"insufficient"',
  ['\003('] = '"evaluator_inference"', ['\003)'] = '"deterministic_effect"', ['\003*'] = '"controlled_replay"',
  ['\003+'] = '"owner_correction"', ['\003,'] = '"item"', ['\003-'] = '"set"', ['\003.'] = '"none"',
  ['\003/'] = '"conflict"', ['\0030'] = '"attenuation_proposed"', ['\0031'] = '"unresolved_attribution"',
  ['\0032'] = '"manual_review"', ['\0033'] = '"attenuate_or_review"', ['\0034'] = '"collect_attribution"',
  ['\0035'] = '"negative_utility_requires_review"', ['\0036'] = '"same_evidence_tier_conflict"',
  ['\0037'] = '"strongest_evidence_unknown"', ['\0038'] = '"attribution_not_established"',
  ['\0039'] = '"conflicting_observation_delivery"', ['\003:'] = '"ready"', ['\003;'] = '"review_required"',
  ['\003<'] = '"empty"',
}
local MAX_HISTORY = 256
local MAX_REJECTIONS = 64

local function id_of(member)
  return string.match(member, '%z([^%z]*)$')
end

local function fragments(key, ids)
  if #ids == 0 then return '' end
  local out = {}
  local chunk = 500
  for i = 1, #ids, chunk do
    local last = math.min(i + chunk - 1, #ids)
    local vals = redis.call('HMGET', key, unpack(ids, i, last))
    for j = 1, #vals do
      if vals[j] then out[#out + 1] = vals[j] end
    end
  end
  return table.concat(out, ',')
end

local function history_ids(keys, accepted)
  local members = redis.call('ZRANGE', keys[6], 0, -1)
  local ids = {}
  if accepted <= MAX_HISTORY then
    for i = 1, #members do ids[i] = id_of(members[i]) end
    return ids
  end
  -- Past the bound: every subject's latest entry, then the newest others.
  local keep = {}
  local kept = 0
  for _, m in ipairs(redis.call('HVALS', keys[7])) do
    if not keep[m] then keep[m] = true; kept = kept + 1 end
  end
  local i = #members
  while i >= 1 and kept < MAX_HISTORY do
    local m = members[i]
    if not keep[m] then keep[m] = true; kept = kept + 1 end
    i = i - 1
  end
  for _, m in ipairs(members) do
    if keep[m] then ids[#ids + 1] = id_of(m) end
  end
  return ids
end

local function split(text)
  local pieces = {}
  local start = 1
  while true do
    local at = string.find(text, SEP, start, true)
    if not at then pieces[#pieces + 1] = string.sub(text, start); return pieces end
    pieces[#pieces + 1] = string.sub(text, start, at - 1)
    start = at + 1
  end
end

local function expand(text)
  return (string.gsub(text, '[\2\3].', EXPANSION))
end

local function read(keys, args)
  local meta = redis.call('HMGET', keys[1], 'rej', 'skel', 'acc')
  if meta[1] then return expand(meta[1]) end
  if not meta[2] then return nil end
  local pieces = split(meta[2])
  local accepted = tonumber(meta[3] or '0')
  local history = fragments(keys[5], history_ids(keys, accepted))
  local conflict_ids = redis.call('ZRANGE', keys[9], 0, MAX_REJECTIONS - 1)
  local rejections = fragments(keys[8], conflict_ids)
  local subject_ids = {}
  for i, m in ipairs(redis.call('ZRANGE', keys[4], 0, -1)) do subject_ids[i] = id_of(m) end
  local proposals = fragments(keys[10], subject_ids)
  local subjects = fragments(keys[3], subject_ids)
  return expand(table.concat({
    pieces[1], '[', history, ']', pieces[2], '[', rejections, ']',
    pieces[3], '[', proposals, ']', pieces[4], '[', subjects, ']', pieces[5],
  }))
end

local function apply(keys, args)
  local expected = args[1]
  local current = redis.call('HGET', keys[1], 'v')
  if not current then
    if expected ~= '0' then return {-2, 0} end
    current = '0'
  end
  if current ~= expected then return {-1, tonumber(current)} end
  local version = tonumber(current) + 1
  local k = tonumber(args[2])
  local i = 3
  for _ = 1, k do
    redis.call('HSET', keys[1], args[i], args[i + 1])
    i = i + 2
  end
  while i <= #args do
    local op, key, field, value = args[i], keys[tonumber(args[i + 1])], args[i + 2], args[i + 3]
    if op == 'HSET' then redis.call('HSET', key, field, value)
    elseif op == 'HDEL' then redis.call('HDEL', key, field)
    elseif op == 'ZADD' then redis.call('ZADD', key, 0, field)
    elseif op == 'ZREM' then redis.call('ZREM', key, field)
    elseif op == 'DEL' then redis.call('DEL', key)
    else return redis.error_reply('mufold_apply_v1: unknown op ' .. tostring(op)) end
    i = i + 4
  end
  redis.call('HSET', keys[1], 'v', version)
  return {1, version}
end

redis.register_function{function_name = 'mufold_read_v1', callback = read, flags = {'no-writes'}}
redis.register_function{function_name = 'mufold_apply_v1', callback = apply}
