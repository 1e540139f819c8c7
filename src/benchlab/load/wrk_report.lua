-- benchlab: print wrk's summary as one JSON line (prefixed) instead of scraping its text.
-- `buckets` is wrk's whole latency histogram: every distinct latency (µs) with its count.
local quantiles = {"50", "75", "90", "95", "99", "99.9", "99.99"}

local function finite(x)
  if x ~= x or x == math.huge or x == -math.huge then return 0 end
  return x
end

done = function(summary, latency, requests)
  local parts = {}
  local has = summary.requests > 0
  for _, q in ipairs(quantiles) do
    local value = has and latency:percentile(tonumber(q)) or 0
    parts[#parts + 1] = string.format('"%s":%d', q, value)
  end
  local buckets = {}
  for i = 1, #latency do
    local value, count = latency(i)
    buckets[#buckets + 1] = string.format("[%d,%d]", value, count)
  end
  local e = summary.errors
  io.write(string.format(
    'BENCHLAB_WRK_JSON {"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"max":%d,"mean":%.3f,"stdev":%.3f,"percentiles":{%s},' ..
    '"buckets":[%s]}}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    has and latency.min or 0, has and latency.max or 0,
    has and finite(latency.mean) or 0, has and finite(latency.stdev) or 0,
    table.concat(parts, ","), table.concat(buckets, ",")))
end
