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
  (Kept for folds of the previous release still running during an upgrade;
  this release calls mufold_apply_v2.)

mufold_apply_v2
  The same apply with far fewer arguments and calls: an op of v1 took four
  arguments and one redis.call; here a run of ops with one opcode on one key
  takes only its operands and one call.
  ARGV[1]  expected version ("0" when the identity is new)
  ARGV[2]  k, the number of watermark pairs that follow
  ARGV[3 .. 2+2k]  field, offset pairs ("w:<topic>:<partition>", offset)
  ARGV[3+2k]  the program: runs separated by single spaces, each
    <opcode><key index 1..10>*<ops in the run>, e.g. "Z6*2 H5*2 H1*1"
    opcodes and the operands each op takes from the arguments that follow:
      H  HSET field value     D  HDEL field      Z  ZADD member (score 0)
      R  ZREM member          X  DEL (none; a run of one)
  then the operands, in program order.
  The ops of one call must commute (the fold never writes one field twice
  in a call, nor anything else into a key it deletes): a run is one command.
  Returns as mufold_apply_v1. A malformed program, or operands that do not
  match it, is an error reply checked before anything is written.
  (Kept for folds of the previous release during an upgrade.)

mufold_apply_v3
  mufold_apply_v2 behind a position guard. KEYS: the identity's ten keys and,
  eleventh, the control hash <prefix>:control (left out on a Redis Cluster,
  where it lives in another slot: there the guard is not made).
  ARGV[1]  the generation written
  ARGV[2]  '<topic>:<partition>' of the batch
  ARGV[3]  the offset the batch starts at (where the fold fetched from)
  then mufold_apply_v2's arguments.
  Returns as mufold_apply_v2, and, before anything is written:
    -3  the generation is not the live one
    -4  the live generation's mark for the partition is below ARGV[3]: Redis
        went back in time, the records before the batch are not folded

mufold_apply_v4
  mufold_apply_v3 with the identity's offset index (src/fold/offset-index.ts).
  KEYS: the identity's ten keys; eleventh, its offset index (a list,
  <prefix>:g<N>:{mur_...}:x); twelfth, the control hash, as v3's eleventh (left
  out for a replay's build and on a Redis Cluster: then no guard is made).
  ARGV: as mufold_apply_v3 (the generation, '<topic>:<partition>', the offset
  the batch starts at) when guarded, else as mufold_apply_v2; the program may
  name key 11 and the opcode
      L  RPUSH entry
  (the index entries of the applied deliveries, in the order applied). L is
  accepted on key 11 only, and nothing but L on it.
  Returns as mufold_apply_v3 (-3 and -4 only when guarded).

mufold_as_of_v1 (read-only, FCALL_RO)
  KEYS: as mufold_apply_v4's first eleven.
  ARGV: none
  Returns, read in one atomic call, {meta, d, h, index}: the meta hash, the
  delivery records and the history fragments as flat field/value arrays
  (HGETALL), and the offset index (LRANGE 0 -1). What an as-of read rebuilds
  a past state from.
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

-- What every apply starts with: the version check, then the watermarks. `b` is where the apply's own arguments
-- start (0, or 3 behind mufold_apply_v3's guard). Returns the index of the first argument after the watermarks
-- and the new version, or nil and the reply that refuses the call.
local function begin(keys, args, k, b)
  local expected = args[b + 1]
  local current = redis.call('HGET', keys[PART.m], META.version)
  if not current then
    if expected ~= '0' then return nil, {-2, 0} end
    current = '0'
  end
  if current ~= expected then return nil, {-1, tonumber(current)} end
  local i = b + 3
  for _ = 1, k do
    redis.call('HSET', keys[PART.m], args[i], args[i + 1])
    i = i + 2
  end
  return i, tonumber(current) + 1
end

local function apply(keys, args)
  local i, version = begin(keys, args, tonumber(args[2]), 0)
  if not i then return version end
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

-- Operands each op of mufold_apply_v2 takes, by opcode.
local OPERANDS = {H = 2, D = 1, Z = 1, R = 1, X = 0}

-- The runs of a program ("H5*2 Z6*2"), each {opcode, key index, ops}, or nil when it is malformed. `index`: the
-- offset index's key position (mufold_apply_v4), where only L runs go; nil: no L run at all.
local function runs_of(program, nkeys, list)
  local out, at = {}, 1
  while at <= #program do
    local _, last, op, index, n = string.find(program, '^(%u)([1-9]%d*)%*([1-9]%d*)', at)
    if not last then return nil end
    index, n = tonumber(index), tonumber(n)
    if op == 'L' then
      if index ~= list then return nil end
    elseif not OPERANDS[op] or index > nkeys or index == list or (op == 'X' and n ~= 1) then
      return nil
    end
    out[#out + 1] = {op, index, n}
    at = last + 1
    if at <= #program then
      if string.sub(program, at, at) ~= ' ' or at == #program then return nil end
      at = at + 1
    end
  end
  return out
end

-- The runs of mufold_apply_v2, its arguments starting after args[b]; `name` is the function's, for errors;
-- `list`, mufold_apply_v4's offset index position (nil for v2 and v3).
local function apply_runs(keys, args, b, name, list)
  local k = tonumber(args[b + 2])
  local runs = k and args[b + 3 + 2 * k] and runs_of(args[b + 3 + 2 * k], list or IDENTITY_KEYS, list)
  if not runs then return redis.error_reply(name .. ': malformed arguments') end
  -- The program is checked against its operands before the first write (an error reply undoes nothing).
  local operands = 0
  for _, run in ipairs(runs) do operands = operands + (run[1] == 'L' and 1 or OPERANDS[run[1]]) * run[3] end
  if b + 3 + 2 * k + operands ~= #args then
    return redis.error_reply(name .. ': the program takes ' .. operands .. ' operands, got ' .. (#args - b - 3 - 2 * k))
  end
  local i, version = begin(keys, args, k, b)
  if not i then return version end
  i = i + 1
  for _, run in ipairs(runs) do
    local op, key, n = run[1], keys[run[2]], run[3]
    if op == 'H' then
      redis.call('HSET', key, unpack(args, i, i + 2 * n - 1))
      i = i + 2 * n
    elseif op == 'Z' then
      local scored = {}
      for j = 0, n - 1 do scored[2 * j + 1] = 0; scored[2 * j + 2] = args[i + j] end
      redis.call('ZADD', key, unpack(scored))
      i = i + n
    elseif op == 'X' then
      redis.call('DEL', key)
    elseif op == 'L' then
      redis.call('RPUSH', key, unpack(args, i, i + n - 1))
      i = i + n
    else
      redis.call(op == 'D' and 'HDEL' or 'ZREM', key, unpack(args, i, i + n - 1))
      i = i + n
    end
  end
  redis.call('HSET', keys[PART.m], META.version, version)
  return {1, version}
end

local function apply_v2(keys, args)
  return apply_runs(keys, args, 0, 'mufold_apply_v2')
end

-- Offsets are compared as decimal strings (they can pass 2^53, where Lua's doubles lose digits).
local function offset_greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

-- The position lives with the state: nothing is written for a batch that starts past what the live
-- generation's mark says is folded (a Redis restored from a backup, a promoted lagging replica), nor to a
-- generation that is no longer live. Checked in the same atomic call as the write.
local function apply_v3(keys, args)
  if #keys == IDENTITY_KEYS + 1 then
    local control = keys[IDENTITY_KEYS + 1]
    if redis.call('HGET', control, 'generation') ~= args[1] then return {-3, 0} end
    local mark = redis.call('HGET', control, 'mark:' .. args[1] .. ':' .. args[2]) or '0'
    if offset_greater(args[3], mark) then return {-4, 0} end
  end
  return apply_runs(keys, args, 3, 'mufold_apply_v3')
end

-- The guard of mufold_apply_v3, with the offset index as the eleventh key and the control hash, when given, the twelfth.
local function apply_v4(keys, args)
  local list = IDENTITY_KEYS + 1
  if #keys == list + 1 then
    local control = keys[list + 1]
    if redis.call('HGET', control, 'generation') ~= args[1] then return {-3, 0} end
    local mark = redis.call('HGET', control, 'mark:' .. args[1] .. ':' .. args[2]) or '0'
    if offset_greater(args[3], mark) then return {-4, 0} end
    return apply_runs(keys, args, 3, 'mufold_apply_v4', list)
  end
  if #keys ~= list then return redis.error_reply('mufold_apply_v4: takes 11 or 12 keys, got ' .. #keys) end
  return apply_runs(keys, args, 0, 'mufold_apply_v4', list)
end

local function as_of(keys, args)
  return {
    redis.call('HGETALL', keys[PART.m]),
    redis.call('HGETALL', keys[PART.d]),
    redis.call('HGETALL', keys[PART.h]),
    redis.call('LRANGE', keys[IDENTITY_KEYS + 1], 0, -1),
  }
end

redis.register_function{function_name = 'mufold_read_v1', callback = read, flags = {'no-writes'}}
redis.register_function{function_name = 'mufold_as_of_v1', callback = as_of, flags = {'no-writes'}}
redis.register_function{function_name = 'mufold_apply_v1', callback = apply}
redis.register_function{function_name = 'mufold_apply_v2', callback = apply_v2}
redis.register_function{function_name = 'mufold_apply_v3', callback = apply_v3}
redis.register_function{function_name = 'mufold_apply_v4', callback = apply_v4}
