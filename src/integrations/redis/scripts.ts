/**
 * The Lua side of the Redis limiters: one script per operation (`reserve`, `cancel`, `pause`), each
 * running over ALL keys of a combination at once, atomically.
 *
 * Design note. A reservation asks every policy of the combination for its earliest grant time,
 * takes `at = max(earliest_i)` (rounded up to a whole microsecond), and either refuses — writing
 * nothing at all — or takes on every key at that same `at`. The reply is the DELAY `at − now`, so
 * the client clocks never matter. All times are integer microseconds (exact in a Lua double up to
 * 2⁵³ µs, about 285 years of epoch time); fractional quantities (the smooth limiter's permit count,
 * which holds `−burst`) are stored with `%.17g`, which round-trips a double exactly.
 *
 * State per policy key (every key carries a TTL derived from its state, plus `margin`). The small,
 * per-call state lives in STRINGS, so one MGET reads it for every key of a combination (with the
 * call's record) and one `SET … PX` writes a key with its expiry: Redis commands, not arithmetic,
 * are most of a script's cost.
 * - smooth (`…:s:<name>` string `a c s bar q p l lb`, `…:s:<name>:q` zset, `…:s:<name>:b` hash):
 *   the in-memory `SmoothPolicy` as `a` (anchor µs), `c` (permits since the anchor), `p` (paused
 *   until), plus an undo log so a cancelled reservation gives its slot back. Grants are future debt:
 *   a later reservation is placed after the slots already handed out, so only a cancelled suffix can
 *   be reclaimed exactly (`:q` orders pending reservations by the sequence number `s`, `q` counts
 *   them, `:b` holds the state before each; a cancelled middle reservation hands its before-state to
 *   its successor; `bar` marks an immediate grant that interleaved with pending ones, behind which
 *   nothing is restored; `l`/`lb` remember the last take so an immediate grant that timed out can be
 *   refunded).
 * - strict window (`…:w:<name>` zset + `…:w:<name>:m` string, the pause): one member per RESERVATION
 *   (`<at>|<n>|<id>`), scored by the cumulative permit count, so the entry whose leaving makes room
 *   is found with one ZRANGEBYSCORE (O(log M)); trimming looks at the oldest few entries and falls back
 *   to a binary search over ranks after a lull. Grants are FIFO (`at ≥` the newest entry), which
 *   keeps time order and count order the same. A cancel removes the entry and renumbers the later
 *   ones, so the window stays exact.
 * - reservation records (`…:r:<call>`, a string per reserve call, entry `<i>` of its `,`-joined list
 *   for the reservation `<call>/<i>`): `"<at>|<n>"`, kept `grace` ms past the call's last `at` so a
 *   cancel sent after an ambiguous timeout still refunds; a cancel turns the entry into a tombstone
 *   `"x"` (and keeps the record at least `tombstone` ms) that a late or retried reserve honours, so
 *   nothing is ever refunded twice or taken after its cancel.
 *
 * Loops are bounded by O(log M) probes, never by the number of entries, so a script never holds the
 * server for long (Redis answers BUSY to everyone while a script runs).
 *
 * @module
 */

import { Script } from "./script.ts";

/** Reply codes of the scripts (first element of the reply array). */
export const CODE = Object.freeze({
  /** reserve: granted; delay and grant time follow. cancel: refunded. */
  ok: 1,
  /** reserve: the wait would exceed maxWait; nothing written; the predicted delay follows. */
  wait: 2,
  /** reserve: a key already holds `maxPending` outstanding reservations; nothing written. */
  full: 3,
  /** reserve: this id was cancelled before it arrived (tombstone); nothing written. */
  cancelled: 4,
  /** reserve: this id was already granted (a resent command); the original delay follows. */
  replay: 5,
  /** cancel: nothing to refund (unknown id, already cancelled, or state gone). */
  none: 0,
});

/**
 * Shared Lua: argument parsing, number formatting, records, and the two policies. ARGV layout for
 * every operation: [1] now µs ('' = use TIME), [2] request count, [3] batch id (reserve) or the
 * pause duration µs, [4] unused, [5] maxPending, [6] grace ms, [7] margin ms, [8] tombstone ms,
 * [9] policy count, then 5 slots per policy: kind ('s'|'w'), limit, interval µs, burst, initial.
 * KEYS: the policy keys first (smooth: state, queue, undo log; window: entries, pause), then the
 * record keys.
 */
const PRELUDE = `
local function now_us()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fint(x) return string.format('%d', x) end
local function fnum(x) return string.format('%.17g', x) end
local function ttl(horizon, margin)
  local ms = math.ceil(horizon / 1000)
  if ms < 0 then ms = 0 end
  return ms + margin
end
-- a string key with its TTL in one call (a TTL of 0 means "already at rest": the key goes)
local function put(key, value, ms)
  if ms > 0 then redis.call('SET', key, value, 'PX', ms) else redis.call('DEL', key) end
end
local MARGIN = tonumber(ARGV[7])
local GRACE = tonumber(ARGV[6])

-- the policies and their keys; returns the list and how many keys they use
local function policies()
  local list = {}
  local count = tonumber(ARGV[9])
  local k = 0
  for i = 1, count do
    local b = 9 + (i - 1) * 5
    local P = { kind = ARGV[b + 1], lim = tonumber(ARGV[b + 2]), iv = tonumber(ARGV[b + 3]),
      burst = tonumber(ARGV[b + 4]), init = tonumber(ARGV[b + 5]), k1 = KEYS[k + 1], k2 = KEYS[k + 2] }
    if P.kind == 's' then P.k3 = KEYS[k + 3]; k = k + 3 else k = k + 2 end
    list[i] = P
  end
  return list, k
end

-- records: one string per reserve call, entries joined by ',' ('' = nothing recorded, 'x' = tombstone)
local function rec_parse(v)
  local t = {}
  local n = 0
  local pos = 1
  while true do
    local c = string.find(v, ',', pos, true)
    n = n + 1
    if c then t[n] = string.sub(v, pos, c - 1); pos = c + 1
    else t[n] = string.sub(v, pos); return t, n end
  end
end
local function rec_join(t, n)
  for i = 1, n do if not t[i] then t[i] = '' end end
  return table.concat(t, ',', 1, n)
end

-- smooth (SmoothPolicy, same arithmetic in the same order) ----------------------------------
-- state string: 'a c s bar q p l lb' (p, l, lb may be empty)
local function s_next(P) return P.a + (P.c * P.iv) / P.lim end
local function s_pause(P, untilt)
  if s_next(P) < untilt then P.a = untilt; P.c = 0 end
end
local function s_parse(P, v, now)
  if v then
    local a, c, s, bar, q, p, l, lb = string.match(v, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S*) (%S*) (%S*)$')
    P.a = tonumber(a); P.c = tonumber(c); P.s = tonumber(s); P.bar = tonumber(bar); P.qn = tonumber(q)
    P.p = p ~= '' and tonumber(p) or false; P.l = l; P.lb = lb
    P.exists = true
  else
    P.a = now; P.c = -P.init; P.p = false; P.s = 0; P.bar = 0; P.qn = 0; P.l = ''; P.lb = ''
    P.exists = false
  end
end
local function s_load(P, now) s_parse(P, redis.call('GET', P.k1), now) end
local function s_earliest(P, n, now)
  local nf = s_next(P)
  if nf > now then return nf end
  return now
end
local function s_take(P, n, at)
  if s_next(P) < at - (P.burst * P.iv) / P.lim then P.a = at; P.c = -P.burst end
  P.c = P.c + n
end
local function s_horizon(P, now)
  local h = s_next(P) + (P.init * P.iv) / P.lim - now
  if P.p and P.p - now > h then h = P.p - now end
  return h
end
local function s_save(P, now)
  local ms = ttl(s_horizon(P, now), MARGIN)
  put(P.k1, fint(P.a) .. ' ' .. fnum(P.c) .. ' ' .. fint(P.s) .. ' ' .. fint(P.bar) .. ' ' .. fint(P.qn) .. ' ' ..
    (P.p and fint(P.p) or '') .. ' ' .. P.l .. ' ' .. P.lb, ms)
  if P.qn > 0 then redis.call('PEXPIRE', P.k2, ms); redis.call('PEXPIRE', P.k3, ms) end
end
local function s_restore(P, before)
  local a, c = string.match(before, '^(%-?%d+)|(.+)$')
  P.a = tonumber(a); P.c = tonumber(c)
  if P.p then s_pause(P, P.p) end
end
-- drop settled reservations from the head of the undo log (granted more than GRACE ago)
local function s_prune(P, now)
  if P.qn == 0 then return end
  for _ = 1, 8 do
    local head = redis.call('ZRANGE', P.k2, 0, 15)
    if #head == 0 then return end
    local bs = redis.call('HMGET', P.k3, unpack(head))
    local gone = 0
    for i = 1, #head do
      local g = bs[i] and tonumber(string.match(bs[i], '^(%-?%d+)|')) or nil
      if g and g + GRACE * 1000 > now then break end
      gone = i
    end
    if gone > 0 then
      redis.call('HDEL', P.k3, unpack(head, 1, gone))
      redis.call('ZREMRANGEBYRANK', P.k2, 0, gone - 1)
      P.qn = P.qn - gone
      P.dirty = true
    end
    if gone < #head then return end
  end
end

-- strict window (WindowPolicy over a zset of reservations) ----------------------------------
local function w_parse(m)
  local t, n = string.match(m, '^(%-?%d+)|(%d+)|')
  return tonumber(t), tonumber(n)
end
-- Drops the entries that left the window; remembers the first one left (P.fn, P.fc) when seen.
local function w_trim(P, now)
  P.fc = false
  -- steady state: a few entries leave per call, found among the oldest 4
  local head = redis.call('ZRANGE', P.k1, 0, 3, 'WITHSCORES')
  local count = #head / 2
  local gone = 0
  for i = 1, count do
    local t, n = w_parse(head[2 * i - 1])
    if t + P.iv > now then P.fn = n; P.fc = tonumber(head[2 * i]); break end
    gone = i
  end
  if gone < count or count == 0 then
    if gone > 0 then redis.call('ZREMRANGEBYRANK', P.k1, 0, gone - 1) end
    -- fewer than 4 entries: the newest is among them
    if count < 4 and count > gone then
      P.tlast = w_parse(head[2 * count - 1]); P.clast = tonumber(head[2 * count])
    elseif count == 0 or count == gone then
      P.tlast = false; P.clast = 0
    end
    return
  end
  local last = redis.call('ZRANGE', P.k1, -1, -1)
  if w_parse(last[1]) + P.iv <= now then redis.call('DEL', P.k1); P.tlast = false; P.clast = 0; return end
  -- after a lull: binary search the first entry still inside the window, ranks [lo, hi]
  local lo, hi = count, redis.call('ZCARD', P.k1) - 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', P.k1, mid, mid)
    if w_parse(m[1]) + P.iv <= now then lo = mid + 1 else hi = mid end
  end
  redis.call('ZREMRANGEBYRANK', P.k1, 0, lo - 1)
end
-- p: the pause string (read with the record), or false
local function w_load(P, now, p)
  P.tlast = nil
  w_trim(P, now)
  P.p = p and tonumber(p) or false
  if P.tlast ~= nil then return end
  local last = redis.call('ZRANGE', P.k1, -1, -1, 'WITHSCORES')
  if #last > 0 then
    P.tlast = w_parse(last[1]); P.clast = tonumber(last[2])
  else
    P.tlast = false; P.clast = 0
  end
end
-- a batch's new window entries are added in one ZADD, flushed before anything reads the zset again
local function w_flush(P)
  if P.adds and #P.adds > 0 then redis.call('ZADD', P.k1, unpack(P.adds)); P.adds = {} end
end
local function w_earliest(P, n, now)
  local e = now
  if P.p and P.p > e then e = P.p end
  if not P.tlast then return e end
  if P.tlast > e then e = P.tlast end
  if not P.fc then
    w_flush(P)
    local first = redis.call('ZRANGE', P.k1, 0, 0, 'WITHSCORES')
    local _, nf = w_parse(first[1])
    P.fn = nf; P.fc = tonumber(first[2])
  end
  local left = P.fc - P.fn
  if P.clast - left + n <= P.lim then return e end
  w_flush(P)
  local j = redis.call('ZRANGEBYSCORE', P.k1, fint(P.clast - P.lim + n), '+inf', 'LIMIT', 0, 1)
  local leaves = w_parse(j[1]) + P.iv
  if leaves > e then e = leaves end
  return e
end
-- the zset lives until its newest entry leaves the window
local function w_ttl(P, now)
  local last = redis.call('ZRANGE', P.k1, -1, -1)
  if #last > 0 then redis.call('PEXPIRE', P.k1, ttl(w_parse(last[1]) + P.iv - now, MARGIN)) end
end
`;

/**
 * reserve: a BATCH of reservations, decided one after the other in arrival order, each exactly as if
 * it were alone in its own call: every request takes on every key at one instant, or writes nothing.
 * The policy state is loaded once, carried in Lua between requests, and saved once, so one call's
 * fixed cost (the round trip, the script's start, loading and saving the state) is shared by the
 * whole batch; per request remain its record entry and, for a window, its zset entry.
 *
 * Calls per script, for a grant with nothing queued: TIME, one MGET (the record and every policy's
 * small state: a smooth key's state string, a window's pause), then one SET per smooth key, the
 * window's trim/ZADD/PEXPIRE, and one SET for the record — four in all for a smooth key.
 *
 * Records: one string per batch, `…:r:<batch>`, entry `i` = `"<at>|<n>"` (or the tombstone `x`) for
 * the reservation `<batch>/<i>` — one write with its expiry per call instead of one key per request.
 *
 * KEYS: the policy keys, then the batch's record key. ARGV: the common layout with [2] = the number
 * of requests and [3] = the batch id, then 2 slots per request after the policies: n, maxWait µs
 * ('inf' = none). Reply: 3 integers per request, code, delay µs, grant µs.
 */
const RESERVE = `${PRELUDE}
local now = now_us()
local list, k = policies()
local rk = KEYS[k + 1]
local count = tonumber(ARGV[2])
local batch = ARGV[3]
local abase = 9 + 5 * #list
local cap = tonumber(ARGV[5])
-- one read for the record (a resent batch, or tombstones of cancels that overtook it) and every
-- policy's small state
local mkeys = { rk }
for i, P in ipairs(list) do mkeys[i + 1] = P.kind == 's' and P.k1 or P.k2 end
local vals = redis.call('MGET', unpack(mkeys))
local existed = vals[1] ~= false
local recs, rn = {}, 0
if existed then recs, rn = rec_parse(vals[1]) end
local out = {}
local o = 0
local keep = 0
local loaded = false
local took = false
for r = 1, count do
  local b = abase + 2 * (r - 1)
  local id = batch .. '/' .. r
  local n = tonumber(ARGV[b + 1])
  local rec = recs[r]
  if rec and rec ~= '' then
    if rec == 'x' then
      out[o + 1] = 4; out[o + 2] = 0; out[o + 3] = 0; o = o + 3
    else
      local g = tonumber(string.match(rec, '^(%-?%d+)|'))
      local d = g - now
      if d < 0 then d = 0 end
      out[o + 1] = 5; out[o + 2] = d; out[o + 3] = g; o = o + 3
    end
  else
    if not loaded then
      loaded = true
      for i, P in ipairs(list) do
        -- MGET answers nil for a key of another type too: a fresh key is read again with GET, which
        -- raises WRONGTYPE for a misconfiguration instead of overwriting it
        if P.kind == 's' then s_parse(P, vals[i + 1] or redis.call('GET', P.k1), now); s_prune(P, now); P.qadds = {}; P.badds = {}
        else w_load(P, now, vals[i + 1]); P.adds = {}; P.card = false end
      end
    end
    local at = now
    for _, P in ipairs(list) do
      local e
      if P.kind == 's' then e = s_earliest(P, n, now)
      else e = w_earliest(P, n, now) end
      if e > at then at = e end
    end
    at = math.ceil(at)
    local delay = at - now
    local code = 1
    local mw = ARGV[b + 2]
    if mw ~= 'inf' and delay > tonumber(mw) then code = 2
    elseif delay > 0 then
      for _, P in ipairs(list) do
        if P.kind == 's' then
          if P.qn >= cap then code = 3; break end
        elseif P.tlast then
          if not P.card then w_flush(P); P.card = redis.call('ZCARD', P.k1) end
          if P.card >= P.lim + cap then code = 3; break end
        end
      end
    end
    if code == 1 then
      took = true
      local ats = fint(at)
      for _, P in ipairs(list) do
        if P.kind == 's' then
          -- the state before this take, formatted only when written (an undo entry, or the last take at save)
          local ba, bc = P.a, P.c
          s_take(P, n, at)
          P.s = P.s + 1
          if delay > 0 then
            local q = #P.qadds
            P.qadds[q + 1] = P.s; P.qadds[q + 2] = id
            P.badds[q + 1] = id; P.badds[q + 2] = ats .. '|' .. fint(ba) .. '|' .. fnum(bc)
            P.qn = P.qn + 1
          elseif P.qn > 0 then
            P.bar = P.s
          end
          P.l = id; P.la = ba; P.lc = bc
          P.took = true
        else
          P.clast = P.clast + n
          P.adds[#P.adds + 1] = P.clast
          P.adds[#P.adds + 1] = ats .. '|' .. fint(n) .. '|' .. id
          P.tlast = at
          if P.card then P.card = P.card + 1 end
        end
      end
      recs[r] = ats .. '|' .. n
      if r > rn then rn = r end
      local t = ttl(delay, GRACE)
      if t > keep then keep = t end
    end
    out[o + 1] = code; out[o + 2] = delay; out[o + 3] = at; o = o + 3
  end
end
for _, P in ipairs(list) do
  if P.kind == 's' then
    if P.took then
      if #P.qadds > 0 then redis.call('ZADD', P.k2, unpack(P.qadds)); redis.call('HSET', P.k3, unpack(P.badds)) end
      P.lb = fint(P.la) .. '|' .. fnum(P.lc)
    end
    -- pruning alone changes the queue size, so it is saved too
    if P.took or P.dirty then s_save(P, now) end
  elseif took and P.tlast then
    w_flush(P)
    redis.call('PEXPIRE', P.k1, ttl(P.tlast + P.iv - now, MARGIN))
  end
end
if took then
  -- the records live GRACE past the batch's last grant (longer if tombstones already asked for it)
  if existed then
    local left = redis.call('PTTL', rk)
    if left > keep then keep = left end
  end
  put(rk, rec_join(recs, rn), keep)
end
return out
`;

/**
 * cancel: give reservations back, in order, each exactly as if alone (idempotent by id; each leaves a
 * tombstone). KEYS: the policy keys, then the distinct record keys. ARGV: the common layout with
 * [2] = the number of cancels, then 3 slots per cancel after the policies: the index of its record
 * key among the record keys, its entry index, its id. Reply: 3 integers per cancel: code (1 refunded,
 * 0 nothing to refund), n, grant µs.
 */
const CANCEL = `${PRELUDE}
local now = now_us()
local list, k = policies()
local count = tonumber(ARGV[2])
local cbase = 9 + 5 * #list
local TOMB = tonumber(ARGV[8])
local records = {}
local out = {}
local o = 0
for c = 1, count do
  local b = cbase + 3 * (c - 1)
  local ri = tonumber(ARGV[b + 1])
  local field = tonumber(ARGV[b + 2])
  local id = ARGV[b + 3]
  local R = records[ri]
  if not R then
    local v = redis.call('GET', KEYS[k + ri])
    R = { key = KEYS[k + ri], t = {}, n = 0, left = 0 }
    if v then R.t, R.n = rec_parse(v); R.left = redis.call('PTTL', R.key) end
    records[ri] = R
  end
  local rec = R.t[field]
  if rec == 'x' then
    out[o + 1] = 0; out[o + 2] = 0; out[o + 3] = 0; o = o + 3
  else
    R.t[field] = 'x'; R.dirty = true
    if field > R.n then R.n = field end
    if not rec or rec == '' then
      out[o + 1] = 0; out[o + 2] = 0; out[o + 3] = 0; o = o + 3
    else
      local g, n = string.match(rec, '^(%-?%d+)|(%d+)$')
      g = tonumber(g); n = tonumber(n)
      for _, P in ipairs(list) do
        if P.kind == 's' then
          if P.exists == nil then s_load(P, now) end
          if P.exists then
            local seq = redis.call('ZSCORE', P.k2, id)
            if seq then
              seq = tonumber(seq)
              local bf = redis.call('HGET', P.k3, id)
              local before = string.match(bf, '^%-?%d+|(.+)$')
              local nxt = redis.call('ZRANGEBYSCORE', P.k2, '(' .. fint(seq), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
              if #nxt == 0 then
                if seq > P.bar then
                  s_restore(P, before)
                  if P.l == id then P.l = ''; P.lb = '' end
                end
              elseif not (seq <= P.bar and tonumber(nxt[2]) > P.bar) then
                local sb = redis.call('HGET', P.k3, nxt[1])
                local sg = string.match(sb, '^(%-?%d+)|')
                redis.call('HSET', P.k3, nxt[1], sg .. '|' .. before)
              end
              redis.call('ZREM', P.k2, id); P.qn = P.qn - 1
              redis.call('HDEL', P.k3, id)
              P.dirty = true
            elseif P.l == id and P.lb ~= '' then
              s_restore(P, P.lb)
              P.l = ''; P.lb = ''
              P.dirty = true
            end
          end
        else
          local member = fint(g) .. '|' .. fint(n) .. '|' .. id
          local sc = redis.call('ZSCORE', P.k1, member)
          if sc then
            local later = redis.call('ZRANGEBYSCORE', P.k1, '(' .. sc, '+inf')
            for _, m in ipairs(later) do redis.call('ZINCRBY', P.k1, -n, m) end
            redis.call('ZREM', P.k1, member)
            P.dirty = true
          end
        end
      end
      out[o + 1] = 1; out[o + 2] = n; out[o + 3] = g; o = o + 3
    end
  end
end
for _, P in ipairs(list) do
  if P.dirty then
    if P.kind == 's' then s_save(P, now) else w_ttl(P, now) end
  end
end
-- tombstones live at least TOMB ms
for _, R in pairs(records) do
  if R.dirty then
    local ms = R.left
    if ms < TOMB then ms = TOMB end
    put(R.key, rec_join(R.t, R.n), ms)
  end
end
return out
`;

/** pause: nothing is granted on any key of the combination before `now + ARGV[3]` µs. */
const PAUSE = `${PRELUDE}
local now = now_us()
local untilt = now + tonumber(ARGV[3])
for _, P in ipairs((policies())) do
  if P.kind == 's' then
    s_load(P, now)
    if not P.p or untilt > P.p then P.p = untilt end
    s_pause(P, untilt)
    s_save(P, now)
  else
    local p = redis.call('GET', P.k2)
    if not p or untilt > tonumber(p) then put(P.k2, fint(untilt), ttl(untilt - now, MARGIN)) end
  end
end
return {1, fint(untilt - now), fint(untilt)}
`;

/** The three operations. */
export const SCRIPTS: { readonly reserve: Script; readonly cancel: Script; readonly pause: Script } = Object.freeze({
  reserve: new Script("reserve", RESERVE),
  cancel: new Script("cancel", CANCEL),
  pause: new Script("pause", PAUSE),
});
