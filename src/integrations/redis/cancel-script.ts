/**
 * The Lua body of the cancel-and-settle script (design note in `scripts.ts`, which prepends the
 * prelude the limiter's policy kinds need).
 *
 * @module
 */

/**
 * cancel and settle: give reservations back, or settle granted ones with their actual cost, in order,
 * each exactly as if alone. Both are idempotent by id and the first one wins: a cancel leaves a
 * tombstone `x`; a settle turns the record entry into `<at>|<n>|s`, which later cancels and settles
 * leave alone (and a resent reserve still replays).
 *
 * A settle (of a reservation reserved to settle: its entry carries marks) adjusts every key by
 * `delta = actual - n` as the in-memory policies' `adjust` does: a window takes a refund off the
 * reservation's own entry (while it is in the window) and records debt as an entry at `now`, in
 * time order, renumbering the entries booked after it; a smooth key moves its next free time back by
 * a refund, within the bound `SmoothPolicy.adjust` states, and takes debt at `now`. A smooth key
 * changed by a settle sets its barrier: no cancel restores a state from before it (it would drop
 * the settle).
 *
 * KEYS: the policy keys, then the distinct record keys. ARGV: the common layout with [2] = the
 * number of operations, then 4 slots per operation from [6]: the index of its record key
 * among the record keys, its entry index, its id, and '' (cancel) or the actual cost (settle: a
 * number of every policy, or per policy `a;b;…;` for named dimensions).
 * Reply: 3 integers per operation: code (1 refunded / settled, 0 nothing to do), n (summed over the
 * dimensions), grant µs.
 */
export const CANCEL: string = `
local now = now_us()
local list, k = policies()
local count = tonumber(ARGV[2])
local cbase = 5
local records = {}
local out = {}
local o = 0
-- the amounts of a record entry '<at>|<amounts>|…' as written
local function rec_amounts(rec) return string.match(rec, '^%-?%d+|([%d;]+)') end
-- a window's rank of the first entry granted after time t (binary search over ranks)
local function w_after(P, t, card)
  local lo, hi = 0, card
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', P.k1, mid, mid)
    if w_parse(m[1]) > t then hi = mid else lo = mid + 1 end
  end
  return lo
end
local function w_settle(P, g, n, actual, id)
  local delta = actual - n
  if delta < 0 then
    -- a refund off the reservation's own entry, while it still counts in the window
    if g + P.iv <= now then return end
    local member = fint(g) .. '|' .. fint(n) .. '|' .. id
    local sc = redis.call('ZSCORE', P.k1, member)
    if not sc then return end
    local later = redis.call('ZRANGEBYSCORE', P.k1, '(' .. sc, '+inf')
    for _, m in ipairs(later) do redis.call('ZINCRBY', P.k1, delta, m) end
    redis.call('ZREM', P.k1, member)
    if actual > 0 then redis.call('ZADD', P.k1, fint(tonumber(sc) + delta), fint(g) .. '|' .. fint(actual) .. '|' .. id) end
    P.dirty = true
  elseif delta > 0 then
    -- debt: an entry at now, after every entry granted by now and before those booked later
    local card = redis.call('ZCARD', P.k1)
    local r = w_after(P, now, card)
    local base = 0
    if r > 0 then
      base = tonumber(redis.call('ZRANGE', P.k1, r - 1, r - 1, 'WITHSCORES')[2])
    elseif card > 0 then
      local first = redis.call('ZRANGE', P.k1, 0, 0, 'WITHSCORES')
      local _, fn = w_parse(first[1])
      base = tonumber(first[2]) - fn
    end
    if r < card then
      for _, m in ipairs(redis.call('ZRANGE', P.k1, r, -1)) do redis.call('ZINCRBY', P.k1, delta, m) end
    end
    redis.call('ZADD', P.k1, fint(base + delta), fint(now) .. '|' .. fint(delta) .. '|' .. id .. '+')
    P.dirty = true
  end
end
local function s_settle(P, delta, mark)
  if delta == 0 then return end
  if P.exists == nil then s_load(P, now) end
  local e, tk = string.match(mark, '^(%d+):(%d+)$')
  -- the state the grant was counted in expired at rest (gone, or created again since): it was paid
  -- off long ago, in the smaller world too, so a refund has nothing to give back; debt is taken now
  if delta < 0 and (not P.exists or e ~= P.e) then return end
  s_adjust(P, delta, tonumber(tk), now)
  if P.qn > 0 then P.bar = P.s end
  P.l = ''; P.lb = ''
  P.dirty = true
end
for c = 1, count do
  local b = cbase + 4 * (c - 1)
  local ri = tonumber(ARGV[b + 1])
  local field = tonumber(ARGV[b + 2])
  local id = ARGV[b + 3]
  local actual = ARGV[b + 4]
  local R = records[ri]
  if not R then
    local v = redis.call('GET', KEYS[k + ri])
    R = { key = KEYS[k + ri], t = {}, n = 0, left = 0 }
    if v then R.t, R.n = rec_parse(v); R.left = redis.call('PTTL', R.key) end
    records[ri] = R
  end
  local rec = R.t[field]
  local g, n, marks, namt
  if rec and rec ~= '' and rec ~= 'x' then
    g, n, marks = string.match(rec, '^(%-?%d+)|([%d;]+)|?(.*)$')
    g = tonumber(g); n, namt = amounts(n)
  end
  -- the reply's n: what was reserved (summed over the dimensions)
  local total = n
  if namt then total = 0; for _, x in ipairs(namt) do total = total + x end end
  if rec == 'x' or marks == 's' or (actual ~= '' and (not g or marks == '')) then
    -- already cancelled or settled (the first wins); or a settle of no settleable reservation
    -- (never reserved to settle, or its record expired: it stays counted as reserved)
    out[o + 1] = 0; out[o + 2] = 0; out[o + 3] = 0; o = o + 3
  elseif actual ~= '' then
    local av, aamt = amounts(actual)
    local ms = {}
    for m in string.gmatch(marks, '[^;]+') do ms[#ms + 1] = m end
    for i, P in ipairs(list) do
      local ni = namt and namt[i] or n
      local ai = aamt and aamt[i] or av
      if P.kind == 's' then s_settle(P, ai - ni, ms[i]) else w_settle(P, g, ni, ai, id) end
    end
    R.t[field] = fint(g) .. '|' .. (namt and rec_amounts(rec) or fint(n)) .. '|s'; R.dirty = true
    out[o + 1] = 1; out[o + 2] = total; out[o + 3] = g; o = o + 3
  else
    R.t[field] = 'x'; R.dirty = true; R.tomb = true
    if field > R.n then R.n = field end
    if not g then
      out[o + 1] = 0; out[o + 2] = 0; out[o + 3] = 0; o = o + 3
    else
      for i, P in ipairs(list) do
        local ni = namt and namt[i] or n
        if ni == 0 then
          -- a dimension that asked nothing: nothing was taken here
        elseif P.kind == 's' then
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
          local member = fint(g) .. '|' .. fint(ni) .. '|' .. id
          local sc = redis.call('ZSCORE', P.k1, member)
          if sc then
            local later = redis.call('ZRANGEBYSCORE', P.k1, '(' .. sc, '+inf')
            for _, m in ipairs(later) do redis.call('ZINCRBY', P.k1, -ni, m) end
            redis.call('ZREM', P.k1, member)
            P.dirty = true
          end
        end
      end
      out[o + 1] = 1; out[o + 2] = total; out[o + 3] = g; o = o + 3
    end
  end
end
for _, P in ipairs(list) do
  if P.dirty then
    if P.kind == 's' then s_save(P, now) else w_ttl(P, now) end
  end
end
-- tombstones live at least TOMB ms; a settle keeps its record's expiry
for _, R in pairs(records) do
  if R.dirty then
    local ms = R.left
    if R.tomb and ms < TOMB then ms = TOMB end
    put(R.key, rec_join(R.t, R.n), ms)
  end
end
return out
`;
