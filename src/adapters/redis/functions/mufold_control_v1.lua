#!lua name=mufold_control_v1
--[[
mufold Redis Function library: the control hash of one key prefix.

Every function takes one key, KEYS[1] = <prefix>:control (a hash), so each
call is atomic on a single node and on a Redis Cluster alike; mufold_seal_changes_v1
also takes the change stream, and is called on a single node only. Fields:
  generation            the live generation
  last                  the highest generation number ever allocated
  rv:<N>                reducer_version of generation N
  building:<N>          token of the replay building generation N (until promoted or dropped)
  building_until:<N>    the build's lease (Redis time, ms): a killed replay's generation is dropped later
  paused, epoch         a promote's fleet pause and its epoch
  pause_until           the pause's lease: Redis time (ms) after which it no longer holds
  mark:<N>:<t>:<p>      next offset of partition p of topic t that generation N has folded
  origin:<N>:<t>:<p>    fingerprint of the record at offset 0 of that partition (topic incarnation)

Generation numbers are never reused, even after Redis lost everything: a new
one is max(last + 1, Redis time in microseconds), so a number written before a
loss can never come back as a new generation.

Return codes (mapped to errors in src/adapters/redis/errors.ts):
   1  ok
  -3  the generation is not (or no longer) the one named: moved, lost, or its build token is gone
  -4  origin differs: the partition's record at offset 0 is not the one this generation folded
  -5  the pause lease expired or its epoch moved (pause, promote); a live seal while a pause holds
  -6  a live seal whose batch starts past the partition's mark: Redis lost committed state (rollback)
  -7  promote: the live generation sealed a partition further than the rebuild

mufold_state_v1 (FCALL_RO)             ARGV: none
  Returns {generation or -1, paused (1 when paused and the lease holds, else 0), epoch, rv of the live generation or ''}.
mufold_init_v1                         ARGV[1] reducer_version
  Makes a live generation if there is none. Returns {generation, its rv}.
mufold_allocate_v1                     ARGV[1] reducer_version, ARGV[2] build token, ARGV[3] build lease ms
  Reserves a new generation for a rebuild. Returns the number.
mufold_renew_build_v1                  ARGV[1] generation, ARGV[2] build token, ARGV[3] lease ms
  Renews the build lease (building_until:<N>). Returns 1, or -3 when the token is not held.
mufold_building_v1 (FCALL_RO)          ARGV: none
  The generations whose build lease holds.
mufold_seal_v1                         ARGV[1] generation, ARGV[2] mode ('live' | build token), then triples
                                       ('<t>:<p>', next offset, the batch's first offset or '')
  Checks the generation (live: is the live one and no pause holds; build: token still held), that no
  batch starts past its mark, and raises the marks. Returns {code, current generation or -1}.
mufold_seal_changes_v1                 KEYS[2] the generation's change stream <prefix>:g<N>:changes (one node only:
                                       it is in another slot); ARGV[1] generation, ARGV[2] mode, ARGV[3] the stream's
                                       MAXLEN (approximate), ARGV[4] the number of entries, then each entry as its
                                       count of field and value strings followed by them, then the seal's triples
  mufold_seal_v1's checks, then one XADD per entry, then the marks. Refused: nothing appended. An XADD that
  fails raises an error before any mark moves. Returns as mufold_seal_v1.
mufold_origin_v1                       ARGV[1] generation, ARGV[2] mode, ARGV[3] '<t>:<p>', ARGV[4] fingerprint
  Records the fingerprint of offset 0 (first writer wins) or checks it. Returns {code, current generation or -1}.
mufold_pause_v1                        ARGV[1] epoch ('' for a new pause), ARGV[2] lease ms
  Takes a new pause (a new epoch) or renews this epoch's while it holds. Returns {code, epoch}.
mufold_unpause_v1                      ARGV[1] epoch
  Clears the pause if it is still this epoch's. Returns {1}.
mufold_forget_v1                       ARGV[1] generation
  Deletes every control field of a dropped generation (rv, building, marks, origins). Returns the count.
mufold_rewind_v1                       ARGV[1] generation
  Forgets every mark of the live generation, if it is still ARGV[1], so that the fold folds the whole log
  again into it (each identity's watermarks skip what it holds): what a fold does when Redis lost an identity
  that the marks say was folded. Returns {code, current generation or -1}.
mufold_promote_v1                      ARGV[1] generation, ARGV[2] build token, ARGV[3] epoch (or ''), ARGV[4] the live generation it replaces (or ''),
                                       ARGV[5] '1' when the live generation folded another log (recreated topic)
  Makes the built generation live if its token is held, the live one is still ARGV[4], with an epoch the
  pause still holds, and no live mark is past the rebuild's; clears the pause. Idempotent.
]]

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function now_ms()
  return math.floor(now_us() / 1000)
end

-- Microseconds of Redis time: a number allocated before a loss is below the clock
-- once a microsecond has passed, so it never comes back (unless the clock goes back).
local function new_generation(key)
  local last = tonumber(redis.call('HGET', key, 'last') or '0')
  local live = tonumber(redis.call('HGET', key, 'generation') or '0')
  local n = math.max(last + 1, live + 1, now_us())
  redis.call('HSET', key, 'last', string.format('%d', n))
  return n
end

local function pause_holds(key)
  if redis.call('HGET', key, 'paused') ~= '1' then return false end
  local until_ms = tonumber(redis.call('HGET', key, 'pause_until') or '0')
  return now_ms() < until_ms
end

local function state(keys, args)
  local key = keys[1]
  local g = redis.call('HGET', key, 'generation')
  local paused = pause_holds(key) and 1 or 0
  local epoch = tonumber(redis.call('HGET', key, 'epoch') or '0')
  local rv = ''
  if g then rv = redis.call('HGET', key, 'rv:' .. g) or '' end
  return {g and tonumber(g) or -1, paused, epoch, rv}
end

local function init(keys, args)
  local key = keys[1]
  local g = redis.call('HGET', key, 'generation')
  if g then
    local rv = redis.call('HGET', key, 'rv:' .. g)
    if not rv then
      -- A generation made before reducer versions were recorded: it holds this one from now on.
      redis.call('HSET', key, 'rv:' .. g, args[1])
      rv = args[1]
    end
    return {tonumber(g), rv}
  end
  local n = new_generation(key)
  local gs = string.format('%d', n)
  redis.call('HSET', key, 'generation', gs, 'rv:' .. gs, args[1])
  return {n, args[1]}
end

local function allocate(keys, args)
  local key = keys[1]
  local n = new_generation(key)
  local gs = string.format('%d', n)
  redis.call('HSET', key, 'rv:' .. gs, args[1], 'building:' .. gs, args[2], 'building_until:' .. gs, string.format('%d', now_ms() + tonumber(args[3])))
  return n
end

-- A rebuild renews its build lease; a killed one's lease runs out and its generation can be dropped.
local function renew_build(keys, args)
  local key, gs = keys[1], args[1]
  if redis.call('HGET', key, 'building:' .. gs) ~= args[2] then return -3 end
  redis.call('HSET', key, 'building_until:' .. gs, string.format('%d', now_ms() + tonumber(args[3])))
  return 1
end

-- Generations whose rebuild still holds its lease.
local function building(keys, args)
  local key = keys[1]
  local now = now_ms()
  local out = {}
  for _, f in ipairs(redis.call('HKEYS', key)) do
    if string.sub(f, 1, 9) == 'building:' then
      local gs = string.sub(f, 10)
      if tonumber(redis.call('HGET', key, 'building_until:' .. gs) or '0') > now then out[#out + 1] = gs end
    end
  end
  return out
end

-- 'live': the generation must be the live one; otherwise the mode is the build token it must hold.
local function holds(key, gs, mode)
  if mode == 'live' then return redis.call('HGET', key, 'generation') == gs end
  return redis.call('HGET', key, 'building:' .. gs) == mode
end

local function current(key)
  local g = redis.call('HGET', key, 'generation')
  return g and tonumber(g) or -1
end

-- Offsets are compared as decimal strings (they can pass 2^53, where Lua's doubles lose digits).
local function offset_greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

-- Why a seal of the triples from args[from] on is refused ({code, current}), or nil: every check before any write.
local function seal_refusal(key, gs, mode, args, from)
  if not holds(key, gs, mode) then return {-3, current(key)} end
  -- A live seal while a promote holds the fleet: the batch waits (it is applied again afterwards).
  if mode == 'live' and pause_holds(key) then return {-5, current(key)} end
  if mode ~= 'live' then return nil end
  for i = from, #args, 3 do
    local old = redis.call('HGET', key, 'mark:' .. gs .. ':' .. args[i])
    -- A batch that starts past the stored mark: Kafka has committed records this state never saw
    -- (Redis came back from an older snapshot or a lagging replica).
    if old and args[i + 2] ~= '' and offset_greater(args[i + 2], old) then return {-6, current(key)} end
  end
  return nil
end

-- Marks only go up.
local function raise_marks(key, gs, args, from)
  for i = from, #args, 3 do
    local field = 'mark:' .. gs .. ':' .. args[i]
    local old = redis.call('HGET', key, field)
    if not old or offset_greater(args[i + 1], old) then redis.call('HSET', key, field, args[i + 1]) end
  end
  return {1, current(key)}
end

local function seal(keys, args)
  return seal_refusal(keys[1], args[1], args[2], args, 3) or raise_marks(keys[1], args[1], args, 3)
end

-- The seal with the batch's change entries, appended after its checks and before its marks: an XADD that fails
-- (the key holds another type) stops the call with no mark moved, so the batch is applied and announced again.
local function seal_changes(keys, args)
  local entries = tonumber(args[4])
  local from = 5
  for _ = 1, entries do from = from + 1 + tonumber(args[from]) end
  local refused = seal_refusal(keys[1], args[1], args[2], args, from)
  if refused then return refused end
  local i = 5
  for _ = 1, entries do
    local n = tonumber(args[i])
    redis.call('XADD', keys[2], 'MAXLEN', '~', args[3], '*', unpack(args, i + 1, i + n))
    i = i + 1 + n
  end
  return raise_marks(keys[1], args[1], args, from)
end

local function origin(keys, args)
  local key, gs, mode = keys[1], args[1], args[2]
  if not holds(key, gs, mode) then return {-3, current(key)} end
  local field = 'origin:' .. gs .. ':' .. args[3]
  local stored = redis.call('HGET', key, field)
  if not stored then
    redis.call('HSET', key, field, args[4])
    return {1, current(key)}
  end
  if stored ~= args[4] then return {-4, current(key)} end
  return {1, current(key)}
end

-- ARGV[1] '' takes a new pause (a new epoch, allocated here) unless one holds;
-- an epoch renews that pause only while it still holds: a lapsed lease is never taken back.
local function pause(keys, args)
  local key, epoch, lease = keys[1], args[1], tonumber(args[2])
  if epoch == '' then
    if pause_holds(key) then return {-5, 0} end
    epoch = tostring(redis.call('HINCRBY', key, 'epoch', 1))
  elseif redis.call('HGET', key, 'epoch') ~= epoch or not pause_holds(key) then
    return {-5, 0}
  end
  redis.call('HSET', key, 'paused', '1', 'pause_until', string.format('%d', now_ms() + lease))
  return {1, tonumber(epoch)}
end

local function unpause(keys, args)
  local key = keys[1]
  if redis.call('HGET', key, 'epoch') == args[1] then redis.call('HSET', key, 'paused', '0', 'pause_until', '0') end
  return {1}
end

-- ARGV[4] the live generation the rebuild replaces ('' for none). Refused when the live fold
-- sealed a partition further than the rebuild did (it would lose those records).
local function promote(keys, args)
  local key, gs, token, epoch, previous, log_changed = keys[1], args[1], args[2], args[3], args[4], args[5] == '1'
  local live = redis.call('HGET', key, 'generation')
  -- Already done (a resent call whose first reply was lost): the same answer again.
  if live == gs and not redis.call('HGET', key, 'building:' .. gs) then return {1} end
  if redis.call('HGET', key, 'building:' .. gs) ~= token then return {-3} end
  if (live or '') ~= previous then return {-3} end
  if epoch ~= '' and (redis.call('HGET', key, 'epoch') ~= epoch or not pause_holds(key)) then return {-5} end
  -- (ARGV[5] '1': the live generation folded another log — a recreated topic — so its marks say nothing.)
  if live and not log_changed then
    local head = 'mark:' .. live .. ':'
    for _, f in ipairs(redis.call('HKEYS', key)) do
      if string.sub(f, 1, #head) == head then
        local mine = redis.call('HGET', key, 'mark:' .. gs .. ':' .. string.sub(f, #head + 1)) or '0'
        if offset_greater(redis.call('HGET', key, f), mine) then return {-7} end
      end
    end
  end
  redis.call('HSET', key, 'generation', gs)
  redis.call('HDEL', key, 'building:' .. gs, 'building_until:' .. gs)
  if epoch ~= '' then redis.call('HSET', key, 'paused', '0', 'pause_until', '0') end
  return {1}
end

local function rewind(keys, args)
  local key, gs = keys[1], args[1]
  if redis.call('HGET', key, 'generation') ~= gs then return {-3, current(key)} end
  local head = 'mark:' .. gs .. ':'
  for _, f in ipairs(redis.call('HKEYS', key)) do
    if string.sub(f, 1, #head) == head then redis.call('HDEL', key, f) end
  end
  return {1, current(key)}
end

local function forget(keys, args)
  local key, gs = keys[1], args[1]
  local fields = {}
  for _, f in ipairs(redis.call('HKEYS', key)) do
    if f == 'rv:' .. gs or f == 'building:' .. gs or f == 'building_until:' .. gs or string.sub(f, 1, #gs + 6) == 'mark:' .. gs .. ':' or string.sub(f, 1, #gs + 8) == 'origin:' .. gs .. ':' then
      fields[#fields + 1] = f
    end
  end
  for i = 1, #fields, 500 do redis.call('HDEL', key, unpack(fields, i, math.min(i + 499, #fields))) end
  return #fields
end

redis.register_function{function_name = 'mufold_state_v1', callback = state, flags = {'no-writes'}}
redis.register_function{function_name = 'mufold_init_v1', callback = init}
redis.register_function{function_name = 'mufold_allocate_v1', callback = allocate}
redis.register_function{function_name = 'mufold_seal_v1', callback = seal}
redis.register_function{function_name = 'mufold_seal_changes_v1', callback = seal_changes}
redis.register_function{function_name = 'mufold_origin_v1', callback = origin}
redis.register_function{function_name = 'mufold_pause_v1', callback = pause}
redis.register_function{function_name = 'mufold_unpause_v1', callback = unpause}
redis.register_function{function_name = 'mufold_promote_v1', callback = promote}
redis.register_function{function_name = 'mufold_forget_v1', callback = forget}
redis.register_function{function_name = 'mufold_rewind_v1', callback = rewind}
redis.register_function{function_name = 'mufold_renew_build_v1', callback = renew_build}
redis.register_function{function_name = 'mufold_building_v1', callback = building, flags = {'no-writes'}}
