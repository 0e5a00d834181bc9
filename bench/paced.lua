-- wrk script: each connection waits 2 ms before each request, so 64 connections offer at
-- most 32,000 requests/s (fewer: each also waits for its answer) whatever the server could do (wrk's delay(), in milliseconds). Row 18:
-- latency compared at the same load, below the most nginx serves on these 2 cores.
function delay()
  return 2
end
