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
 * - smooth (`…:s:<name>` string `a c s bar q p l lb tk lt e`, `…:s:<name>:q` zset, `…:s:<name>:b` hash):
 *   the in-memory `SmoothPolicy` as `a` (anchor µs), `c` (permits since the anchor), `p` (paused
 *   until), plus an undo log so a cancelled reservation gives its slot back. Grants are future debt:
 *   a later reservation is placed after the slots already handed out, so only a cancelled suffix can
 *   be reclaimed exactly (`:q` orders pending reservations by the sequence number `s`, `q` counts
 *   them, `:b` holds the state before each; a cancelled middle reservation hands its before-state to
 *   its successor; `bar` marks an immediate grant that interleaved with pending ones, behind which
 *   nothing is restored; `l`/`lb` remember the last take so an immediate grant that timed out can be
 *   refunded; `tk`/`lt` — permits taken ever, the latest take's time — bound a settle's refund as
 *   `SmoothPolicy.adjust` does; `e`, the state's creation time, tells a settle that the state its
 *   reservation was counted in expired at rest: nothing is left to give back then).
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
 *   nothing is ever refunded twice or taken after its cancel. A reservation that settles (`reserve`)
 *   is recorded `"<at>|<n>|<marks>"` (per key, `;`-joined: a smooth key's `e:tk`, its epoch and
 *   permits taken ever right after the take) and kept `settle` ms instead; a settle turns it into `"<at>|<n>|s"`.
 *
 * Loops are bounded by O(log M) probes, never by the number of entries, so a script never holds the
 * server for long (Redis answers BUSY to everyone while a script runs).
 *
 * @module
 */

import { CANCEL } from "./cancel-script.ts";
import { PRELUDE } from "./lua.ts";
import { specialisePrelude } from "./prune.ts";
import { Script } from "./script.ts";

/** Reply codes of the scripts (first element of the reply array). */
export const CODE = Object.freeze({
  /** reserve: granted; delay and grant time follow. cancel: refunded. settle: applied. */
  ok: 1,
  /** reserve: the wait would exceed maxWait; nothing written; the predicted delay follows. */
  wait: 2,
  /** reserve: a key already holds `maxPending` outstanding reservations; nothing written. */
  full: 3,
  /** reserve: this id was cancelled before it arrived (tombstone); nothing written. */
  cancelled: 4,
  /** reserve: this id was already granted (a resent command); the original delay follows. */
  replay: 5,
  /** reserve: the grant would be more than 1e12 ms away (debt piled up on a key); nothing written. */
  far: 6,
  /** cancel or settle: nothing to do (unknown or expired id, already cancelled or settled). */
  none: 0,
});

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
 * Cheap forms of the same work (see the cost rules in `lua.ts`): numeric `for` loops over the policies
 * (`ipairs` is a C call per step); the reply of a lone request made at its size; a reservation id
 * formatted only when granted, with `%d` (concatenating the number would format it as `%.14g`, a
 * float format); the undo log's new entries made on a call's first queued take; a window entry's
 * `n` of 1 written as the literal `'1'` (what `fint(1)` gives).
 *
 * KEYS: the policy keys, then the batch's record key. ARGV: the common layout with [2] = the number
 * of requests and [3] = the batch id, then 3 slots per request from [6]: n (a number of
 * every policy, or per policy `a;b;…;` for named dimensions — a policy asked 0 takes no part), maxWait µs
 * ('inf' = none), '1' for a reservation that settles (else ''). Reply: 3 integers per request, code, delay µs, grant µs.
 */
const RESERVE = `
local now = now_us()
local list, k = policies()
local rk = KEYS[k + 1]
local count = tonumber(ARGV[2])
local batch = ARGV[3]
local abase = 5
local cap = CAP
-- one read for the record (a resent batch, or tombstones of cancels that overtook it) and every
-- policy's small state
local np = #list
local mkeys = { rk }
for i = 1, np do local P = list[i]; mkeys[i + 1] = P.kind == 's' and P.k1 or P.k2 end
local vals = redis.call('MGET', unpack(mkeys))
local existed = vals[1] ~= false
local recs, rn = {}, 0
if existed then recs, rn = rec_parse(vals[1]) end
local out = count == 1 and { 0, 0, 0 } or {}
local o = 0
local keep = 0
local loaded = false
local took = false
for r = 1, count do
  local b = abase + 3 * (r - 1)
  local ns = ARGV[b + 1]
  local n, amt = amounts(ns)
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
      for i = 1, np do
        local P = list[i]
        -- MGET answers nil for a key of another type too: a fresh key is read again with GET, which
        -- raises WRONGTYPE for a misconfiguration instead of overwriting it
        if P.kind == 's' then s_parse(P, vals[i + 1] or redis.call('GET', P.k1), now); s_prune(P, now); P.qadds = false
        else w_load(P, now, vals[i + 1]); P.adds = {}; P.card = false end
      end
    end
    local at = now
    for i = 1, np do
      local P = list[i]
      local ni = amt and amt[i] or n
      if ni > 0 then
        local e
        if P.kind == 's' then e = s_earliest(P, ni, now)
        else e = w_earliest(P, ni, now) end
        if e > at then at = e end
      end
    end
    at = math.ceil(at)
    local delay = at - now
    local code = 1
    local mw = ARGV[b + 2]
    if mw ~= 'inf' and delay > tonumber(mw) then code = 2
    -- a grant past 1e12 ms (debt piled up by many asks): its times would pass what Lua and the key's
    -- expiry hold exactly, and the key would fail for everyone; refused, nothing written
    elseif delay > 1e15 then code = 6
    elseif delay > 0 then
      for i = 1, np do
        local P = list[i]
        if amt and amt[i] == 0 then
          -- a dimension asked nothing: this policy takes no part
        elseif P.kind == 's' then
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
      local id = r == 1 and batch .. '/1' or string.format('%s/%d', batch, r)
      for i = 1, np do
        local P = list[i]
        local ni = amt and amt[i] or n
        if ni == 0 then
          -- a dimension asked nothing: this policy takes no part (no take, no entry)
        elseif P.kind == 's' then
          -- the state before this take, formatted only when written (an undo entry, or the last take at save)
          local ba, bc, btk, blt = P.a, P.c, P.tk, P.lt
          s_take(P, ni, at)
          P.s = P.s + 1
          if delay > 0 then
            if not P.qadds then P.qadds = {}; P.badds = {} end
            local q = #P.qadds
            P.qadds[q + 1] = P.s; P.qadds[q + 2] = id
            P.badds[q + 1] = id; P.badds[q + 2] = ats .. '|' .. s_before(ba, bc, btk, blt)
            P.qn = P.qn + 1
          elseif P.qn > 0 then
            P.bar = P.s
          end
          P.l = id; P.la = ba; P.lc = bc; P.ltk = btk; P.llt = blt
          P.took = true
        else
          P.clast = P.clast + ni
          P.adds[#P.adds + 1] = P.clast
          P.adds[#P.adds + 1] = ats .. '|' .. (ni == 1 and '1' or fint(ni)) .. '|' .. id
          P.tlast = at
          if P.card then P.card = P.card + 1 end
        end
      end
      local t
      if ARGV[b + 3] == '1' then
        -- a reservation that settles: its marks (smooth: permits taken ever, right after this take)
        -- let a settle bound its refund; the record lives SETTLE ms past the grant
        local marks = {}
        for i = 1, np do local P = list[i]; marks[i] = P.kind == 's' and (P.e .. ':' .. fint(P.tk)) or '0' end
        recs[r] = ats .. '|' .. ns .. '|' .. table.concat(marks, ';')
        t = ttl(delay, SETTLE > GRACE and SETTLE or GRACE)
      else
        recs[r] = ats .. '|' .. ns
        t = ttl(delay, GRACE)
      end
      if r > rn then rn = r end
      if t > keep then keep = t end
    end
    out[o + 1] = code; out[o + 2] = delay; out[o + 3] = at; o = o + 3
  end
end
for i = 1, np do
  local P = list[i]
  if P.kind == 's' then
    if P.took then
      if P.qadds then redis.call('ZADD', P.k2, unpack(P.qadds)); redis.call('HSET', P.k3, unpack(P.badds)) end
      P.lb = s_before(P.la, P.lc, P.ltk, P.llt)
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


/** pause: nothing is granted on any key of the combination before `now + ARGV[3]` µs. */
const PAUSE = `
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
  reserve: new Script("reserve", specialisePrelude(PRELUDE, RESERVE) + RESERVE),
  cancel: new Script("cancel", specialisePrelude(PRELUDE, CANCEL) + CANCEL),
  pause: new Script("pause", specialisePrelude(PRELUDE, PAUSE) + PAUSE),
});
