-- wrk script of the proxy benchmark. bench_proxy.py prepends, per run:
--   PRE, POST      request path i = PRE[i] .. nonce .. POST[i], one per source picture
--   RUN_ID         unique per run: the nonce is RUN_ID-thread-counter, so no request repeats a source URL
--   HEADERS        extra request headers (Accept; Connection: close for the new-connection-per-request runs)
--   EXPECT         the output format every response must have: jpeg, png, webp or avif
--   ALLOWED        set of "WxH" a fit-inside 512x512 of the sources may give (longest side 512, aspect kept)
-- Every response is checked (status 200, format from its magic bytes, size from its header); done() prints one
-- line "BENCHJSON {...}" with wrk's figures and the check counts.

for name, value in pairs(HEADERS) do wrk.headers[name] = value end

local threads = {}
local next_tid = 0
function setup(thread)
    thread:set("tid", next_tid)
    next_tid = next_tid + 1
    table.insert(threads, thread)
end

tid = 0
counter = 0
ok, bad_status, bad_format, bad_size = 0, 0, 0, 0
local N = #PRE

function request()
    counter = counter + 1
    -- Each thread rotates through the whole list from its own starting point.
    local index = (counter - 1 + tid * math.floor(N / 2)) % N + 1
    return wrk.format(nil, PRE[index] .. RUN_ID .. "-" .. tid .. "-" .. counter .. POST[index])
end

local function be16(s, i) local a, b = s:byte(i, i + 1); return a * 256 + b end
local function le16(s, i) local a, b = s:byte(i, i + 1); return a + b * 256 end
local function le24(s, i) local a, b, c = s:byte(i, i + 2); return a + b * 256 + c * 65536 end
local function be32(s, i) local a, b, c, d = s:byte(i, i + 3); return ((a * 256 + b) * 256 + c) * 256 + d end

-- The format and pixel size of an encoded image, from its header alone.
local function sniff(b)
    if #b < 32 then return "short" end
    if b:sub(1, 8) == "\137PNG\r\n\26\n" then return "png", be32(b, 17), be32(b, 21) end
    if b:sub(1, 2) == "\255\216" then
        local i = 3
        while i + 8 <= #b do
            if b:byte(i) ~= 0xFF then return "jpeg" end
            local m = b:byte(i + 1)
            if m == 0xFF then
                i = i + 1
            elseif m == 0xD8 or m == 0x01 or (m >= 0xD0 and m <= 0xD7) then
                i = i + 2
            elseif m >= 0xC0 and m <= 0xCF and m ~= 0xC4 and m ~= 0xC8 and m ~= 0xCC then
                return "jpeg", be16(b, i + 7), be16(b, i + 5) -- SOFn: length, precision, height, width
            else
                i = i + 2 + be16(b, i + 2)
            end
        end
        return "jpeg"
    end
    if b:sub(1, 4) == "RIFF" and b:sub(9, 12) == "WEBP" then
        local chunk = b:sub(13, 16)
        if chunk == "VP8 " then return "webp", le16(b, 27) % 16384, le16(b, 29) % 16384 end
        if chunk == "VP8L" then
            local b0, b1, b2, b3 = b:byte(22, 25)
            return "webp", 1 + b0 + (b1 % 64) * 256, 1 + math.floor(b1 / 64) + b2 * 4 + (b3 % 16) * 1024
        end
        if chunk == "VP8X" then return "webp", 1 + le24(b, 25), 1 + le24(b, 28) end
        return "webp"
    end
    if b:sub(5, 8) == "ftyp" and b:sub(1, 64):find("avi[fs]") then
        local p = b:find("ispe", 1, true) -- box: size, "ispe", version+flags, width, height
        if p and p + 15 <= #b then return "avif", be32(b, p + 8), be32(b, p + 12) end
        return "avif"
    end
    return "other"
end

function response(status, headers, body)
    if status ~= 200 then bad_status = bad_status + 1; return end
    local format, w, h = sniff(body)
    if format ~= EXPECT then bad_format = bad_format + 1; return end
    if not w or not ALLOWED[w .. "x" .. h] then bad_size = bad_size + 1; return end
    ok = ok + 1
end

function done(summary, latency, requests)
    local checks = { ok = 0, bad_status = 0, bad_format = 0, bad_size = 0 }
    for _, thread in ipairs(threads) do
        for name in pairs(checks) do checks[name] = checks[name] + (thread:get(name) or 0) end
    end
    local e = summary.errors
    io.write(string.format(
        'BENCHJSON {"requests": %d, "duration_us": %d, "bytes": %d, "connect_errors": %d, "read_errors": %d, '
            .. '"write_errors": %d, "status_errors": %d, "timeouts": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, '
            .. '"max_us": %d, "mean_us": %.1f, "ok": %d, "bad_status": %d, "bad_format": %d, "bad_size": %d}\n',
        summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
        latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
        checks.ok, checks.bad_status, checks.bad_format, checks.bad_size))
end
