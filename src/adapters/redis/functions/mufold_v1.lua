#!lua name=mufold_v1
--[[
mufold Redis Function library, version 1.

Every function takes the ten keys of one reducer identity, all sharing the
hash tag {mur_...}, in the order of IDENTITY_PARTS (src/fold/keys.ts); the
header below (generated at load time, src/adapters/redis/lua-header.ts) names
their positions (PART.m is the meta hash, PART.hi the history order, ...), the
meta fields (META), the bounds and the token table:
  m   meta hash         hi  history order (zset, score 0)
  d   delivery records  hl  subject -> latest history member
  s   subject parts     c   conflict parts
  si  subject order     ci  conflict order (zset of ids)
  h   history parts     p   review proposal parts

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

-- @mufold:generated-header

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
  local members = redis.call('ZRANGE', keys[PART.hi], 0, -1)
  local ids = {}
  if accepted <= MAX_HISTORY then
    for i = 1, #members do ids[i] = id_of(members[i]) end
    return ids
  end
  -- Past the bound: every subject's latest entry, then the newest others.
  local keep = {}
  local kept = 0
  for _, m in ipairs(redis.call('HVALS', keys[PART.hl])) do
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
  local meta = redis.call('HMGET', keys[PART.m], META.rejected, META.skeleton, META.accepted)
  if meta[1] then return expand(meta[1]) end
  if not meta[2] then return nil end
  local pieces = split(meta[2])
  local accepted = tonumber(meta[3] or '0')
  local history = fragments(keys[PART.h], history_ids(keys, accepted))
  local conflict_ids = redis.call('ZRANGE', keys[PART.ci], 0, MAX_REJECTIONS - 1)
  local rejections = fragments(keys[PART.c], conflict_ids)
  local subject_ids = {}
  for i, m in ipairs(redis.call('ZRANGE', keys[PART.si], 0, -1)) do subject_ids[i] = id_of(m) end
  local proposals = fragments(keys[PART.p], subject_ids)
  local subjects = fragments(keys[PART.s], subject_ids)
  return expand(table.concat({
    pieces[1], '[', history, ']', pieces[2], '[', rejections, ']',
    pieces[3], '[', proposals, ']', pieces[4], '[', subjects, ']', pieces[5],
  }))
end

local function apply(keys, args)
  local expected = args[1]
  local current = redis.call('HGET', keys[PART.m], META.version)
  if not current then
    if expected ~= '0' then return {-2, 0} end
    current = '0'
  end
  if current ~= expected then return {-1, tonumber(current)} end
  local version = tonumber(current) + 1
  local k = tonumber(args[2])
  local i = 3
  for _ = 1, k do
    redis.call('HSET', keys[PART.m], args[i], args[i + 1])
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
  redis.call('HSET', keys[PART.m], META.version, version)
  return {1, version}
end

redis.register_function{function_name = 'mufold_read_v1', callback = read, flags = {'no-writes'}}
redis.register_function{function_name = 'mufold_apply_v1', callback = apply}
