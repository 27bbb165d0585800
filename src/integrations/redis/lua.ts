/**
 * The Lua shared by every script (`scripts.ts`): argument parsing, number formatting, reservation
 * records, and the two policies (smooth, strict window) over their Redis keys. The design note is in
 * `scripts.ts`.
 *
 * @module
 */

/**
 * Shared Lua: argument parsing, number formatting, records, and the two policies. ARGV layout for
 * every operation: [1] now µs ('' = use TIME), [2] request count, [3] batch id (reserve) or the
 * pause duration µs, [4] the store's constants `settle maxPending grace margin tombstone` (ms, one
 * argument), [5] the policies, 5 space-separated fields each — kind ('s'|'w'), limit, interval µs,
 * burst, initial — then the per-request (or per-operation) slots. Packing the constant parts into
 * two arguments keeps a call's argument count small: each argument costs the client, the protocol
 * and the server's script setup something, every call.
 * KEYS: the policy keys first (smooth: state, queue, undo log; window: entries, pause), then the
 * record keys.
 *
 * Cost rules (measured in instructions per call under callgrind, Redis 7.0: a lone reserve is some
 * 185k-290k, nearly all of it Lua and command dispatch, not data-structure work). Every C function a
 * script calls (`tonumber`, `string.*`, `math.*`) costs ~1k instructions, a formatted number ~1k, a
 * captured string ~1k, a table grown one slot at a time a rehash per growth. So, with the same
 * results:
 * - numeric strings the code itself wrote (state fields, scores, TIME's reply, the constants matched
 *   by `%d+`) are converted with `x + 0`, the same `strtod` as `tonumber` without its C call;
 * - constant numeric arguments of `redis.call` are string literals (`'0'`, `'-1'`): Redis 7.0 turns a
 *   Lua number argument into text with a `%.17g` format, as costly as a small command, and sends the
 *   same text;
 * - a policy's table is built at its full size (the fields set later named in the constructor, nil);
 * - the usual smooth state (a whole count, no pause, a last take) and undo entry are formatted in one
 *   `string.format` with `%d` for the count, fnum's own choice for a whole number, without the nested
 *   `fnum`/`fint` calls.
 */
export const PRELUDE: string = `
local function now_us()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return t[1] * 1000000 + t[2]
end
local function fint(x) return string.format('%d', x) end
-- %.17g round-trips any double but is the slowest format; a whole number takes the fast %d path
-- (the same digits), so the common integral permit count costs no float formatting
local function fnum(x)
  if x == math.floor(x) and x < 1e15 and x > -1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end
local function ttl(horizon, margin)
  local ms = math.ceil(horizon / 1000)
  if ms < 0 then ms = 0 end
  return ms + margin
end
-- a string key with its TTL in one call (a TTL of 0 means "already at rest": the key goes)
local function put(key, value, ms)
  if ms > 0 then redis.call('SET', key, value, 'PX', ms) else redis.call('DEL', key) end
end
-- the store's constants, one argument: settle ms, maxPending, grace ms, margin ms, tombstone ms
local SETTLE, CAP, GRACE, MARGIN, TOMB = string.match(ARGV[4], '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
SETTLE = SETTLE + 0; CAP = CAP + 0; GRACE = GRACE + 0; MARGIN = MARGIN + 0; TOMB = TOMB + 0

-- a request's permits (reserve) or actual cost (settle): a number of every policy, or per policy
-- 'a;b;…;' (named dimensions: 0 = the policy takes no part); returns the number (0 for a list) and
-- the list (or false)
local function amounts(s)
  local n = tonumber(s)
  if n then return n, false end
  local t, i = {}, 0
  for a in string.gmatch(s, '[^;]+') do i = i + 1; t[i] = tonumber(a) end
  return 0, t
end

-- the policies (one argument, 5 fields each: kind, limit, interval µs, burst, initial) and their
-- keys; returns the list and how many keys they use
local function policies()
  local list = {}
  local k, i = 0, 0
  for kind, lim, iv, burst, init in string.gmatch(ARGV[5], '(%a) (%S+) (%S+) (%S+) (%S+)') do
    i = i + 1
    local P
    if kind == 's' then
      P = { kind = kind, lim = lim + 0, iv = iv + 0, burst = burst + 0, init = init + 0,
        k1 = KEYS[k + 1], k2 = KEYS[k + 2], k3 = KEYS[k + 3], a = nil, c = nil, s = nil, bar = nil, qn = nil, p = nil,
        l = nil, lb = nil, tk = nil, lt = nil, e = nil, exists = nil, dirty = nil, qadds = nil, badds = nil, took = nil,
        la = nil, lc = nil, ltk = nil, llt = nil }
      k = k + 3
    else
      P = { kind = kind, lim = lim + 0, iv = iv + 0, burst = burst + 0, init = init + 0,
        k1 = KEYS[k + 1], k2 = KEYS[k + 2], p = nil, tlast = nil, clast = nil, fn = nil, fc = nil, adds = nil, card = nil,
        dirty = nil }
      k = k + 2
    end
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
  if n == 1 then return t[1] or '' end
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
    local a, c, s, bar, q, p, l, lb, tk, lt, e = string.match(v,
      '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S*) (%S*) (%S*) (%S+) (%S*) (%S+)$')
    if not a then
      -- the layout before reservations settled (no tk, lt, e): nothing taken since counts from here
      a, c, s, bar, q, p, l, lb = string.match(v, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S*) (%S*) (%S*)$')
      tk = '0'; lt = ''; e = '0'
    end
    P.a = a + 0; P.c = c + 0; P.s = s + 0; P.bar = bar + 0; P.qn = q + 0
    P.p = p ~= '' and p + 0 or false; P.l = l; P.lb = lb
    P.tk = tk + 0; P.lt = lt ~= '' and lt + 0 or false; P.e = e
    P.exists = true
  else
    P.a = now; P.c = -P.init; P.p = false; P.s = 0; P.bar = 0; P.qn = 0; P.l = ''; P.lb = ''
    -- e: this state's epoch (created at now); a reservation's mark names it, so a settle can tell a
    -- state that expired at rest and was created again (its count of permits restarted)
    P.tk = 0; P.lt = false; P.e = fint(now)
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
  P.tk = P.tk + n
  P.lt = at
end
-- the state a cancel may restore: 'a|c|tk|lt' (SmoothPolicy's anchor, count, taken, last take)
local function s_before(a, c, tk, lt)
  if lt and c == math.floor(c) and c < 1e15 and c > -1e15 then return string.format('%d|%d|%d|%d', a, c, tk, lt) end
  if lt then return string.format('%d|%s|%d|%d', a, fnum(c), tk, lt) end
  return string.format('%d|%s|%d|', a, fnum(c), tk)
end
-- settles a reservation granted with mark (permits taken ever, right after its take) as
-- SmoothPolicy.adjust: debt is a take now; a refund moves the next free time back by delta, but no
-- earlier than max(t - burst, paused until) + (permits taken since) (t: the latest take, or now)
local function s_adjust(P, delta, mark, now)
  if delta > 0 then s_take(P, delta, now); return end
  local since = P.tk - mark
  local t = now
  if since > 0 then t = P.lt end
  local fa, fc
  if P.p and P.p > t - (P.burst * P.iv) / P.lim then fa = P.p; fc = since else fa = t; fc = since - P.burst end
  local floor = fa + (fc * P.iv) / P.lim
  local nx = s_next(P)
  if nx + (delta * P.iv) / P.lim >= floor then P.c = P.c + delta
  elseif floor < nx then P.a = fa; P.c = fc end
end
-- the key lives until its stored permits reach the burst (or the initial permits, if more): a key
-- back after that starts with initialPermits, so one that expired sooner would lose the burst
local function s_horizon(P, now)
  local stored = P.init
  if P.burst > stored then stored = P.burst end
  local h = s_next(P) + (stored * P.iv) / P.lim - now
  if P.p and P.p - now > h then h = P.p - now end
  return h
end
local function s_save(P, now)
  local ms = ttl(s_horizon(P, now), MARGIN)
  -- one format call for the whole state rather than eight and a 21-piece concatenation
  local c = P.c
  if not P.p and P.lt and c == math.floor(c) and c < 1e15 and c > -1e15 then
    put(P.k1, string.format('%d %d %d %d %d  %s %s %d %d %s', P.a, c, P.s, P.bar, P.qn, P.l, P.lb, P.tk, P.lt, P.e), ms)
  else
    put(P.k1, string.format('%d %s %d %d %d %s %s %s %d %s %s', P.a, fnum(c), P.s, P.bar, P.qn, P.p and fint(P.p) or '',
      P.l, P.lb, P.tk, P.lt and fint(P.lt) or '', P.e), ms)
  end
  if P.qn > 0 then redis.call('PEXPIRE', P.k2, ms); redis.call('PEXPIRE', P.k3, ms) end
end
local function s_restore(P, before)
  local a, c, rest = string.match(before, '^(%-?%d+)|([^|]+)(.*)$')
  P.a = tonumber(a); P.c = tonumber(c)
  local tk, lt = string.match(rest, '^|(%d+)|(%-?%d*)$')
  if tk then P.tk = tonumber(tk); P.lt = lt ~= '' and tonumber(lt) or false end
  if P.p then s_pause(P, P.p) end
end
-- drop settled reservations from the head of the undo log (granted more than GRACE ago)
local function s_prune(P, now)
  if P.qn == 0 then return end
  for _ = 1, 8 do
    local head = redis.call('ZRANGE', P.k2, '0', '15')
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
      redis.call('ZREMRANGEBYRANK', P.k2, '0', gone - 1)
      P.qn = P.qn - gone
      P.dirty = true
    end
    if gone < #head then return end
  end
end

-- strict window (WindowPolicy over a zset of reservations) ----------------------------------
local function w_parse(m)
  local t, n = string.match(m, '^(%-?%d+)|(%d+)|')
  if t then return t + 0, n + 0 end
end
-- Drops the entries that left the window; remembers the first one left (P.fn, P.fc) when seen.
local function w_trim(P, now)
  P.fc = false
  -- steady state: a few entries leave per call, found among the oldest 4
  local head = redis.call('ZRANGE', P.k1, '0', '3', 'WITHSCORES')
  local count = #head / 2
  local gone = 0
  for i = 1, count do
    local t, n = w_parse(head[2 * i - 1])
    if t + P.iv > now then P.fn = n; P.fc = head[2 * i] + 0; break end
    gone = i
  end
  if gone < count or count == 0 then
    if gone > 0 then redis.call('ZREMRANGEBYRANK', P.k1, '0', gone - 1) end
    -- fewer than 4 entries: the newest is among them
    if count < 4 and count > gone then
      P.tlast = w_parse(head[2 * count - 1]); P.clast = head[2 * count] + 0
    elseif count == 0 or count == gone then
      P.tlast = false; P.clast = 0
    end
    return
  end
  local last = redis.call('ZRANGE', P.k1, '-1', '-1')
  if w_parse(last[1]) + P.iv <= now then redis.call('DEL', P.k1); P.tlast = false; P.clast = 0; return end
  -- after a lull: binary search the first entry still inside the window, ranks [lo, hi]
  local lo, hi = count, redis.call('ZCARD', P.k1) - 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', P.k1, mid, mid)
    if w_parse(m[1]) + P.iv <= now then lo = mid + 1 else hi = mid end
  end
  redis.call('ZREMRANGEBYRANK', P.k1, '0', lo - 1)
end
-- p: the pause string (read with the record), or false
local function w_load(P, now, p)
  P.tlast = nil
  w_trim(P, now)
  P.p = p and tonumber(p) or false
  if P.tlast ~= nil then return end
  local last = redis.call('ZRANGE', P.k1, '-1', '-1', 'WITHSCORES')
  if #last > 0 then
    P.tlast = w_parse(last[1]); P.clast = last[2] + 0
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
    local first = redis.call('ZRANGE', P.k1, '0', '0', 'WITHSCORES')
    local _, nf = w_parse(first[1])
    P.fn = nf; P.fc = first[2] + 0
  end
  local left = P.fc - P.fn
  if P.clast - left + n <= P.lim then return e end
  w_flush(P)
  local j = redis.call('ZRANGEBYSCORE', P.k1, fint(P.clast - P.lim + n), '+inf', 'LIMIT', '0', '1')
  local leaves = w_parse(j[1]) + P.iv
  if leaves > e then e = leaves end
  return e
end
-- the zset lives until its newest entry leaves the window
local function w_ttl(P, now)
  local last = redis.call('ZRANGE', P.k1, '-1', '-1')
  if #last > 0 then redis.call('PEXPIRE', P.k1, ttl(w_parse(last[1]) + P.iv - now, MARGIN)) end
end
`;
