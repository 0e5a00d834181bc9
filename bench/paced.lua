-- wrk script: each connection waits a fixed pause before each request (wrk's delay(), in
-- whole milliseconds; the script's argument, 2 when none is given), so 64 connections offer
-- at most 64,000 / pause requests/s, fewer since each also waits for its answer, whatever
-- the server could do. Rows 18 (2 ms) and 18b (1 ms): latency compared at the same load,
-- below the most nginx serves on these 2 cores.
local pause = 2

function init(args)
  if args[1] then pause = tonumber(args[1]) end
end

function delay()
  return pause
end
