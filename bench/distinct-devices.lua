-- wrk script: every request carries an X-Device-ID never sent before in this run.
-- IDs are PREFIX-THREAD-COUNTER: PREFIX is the script argument (`wrk ... -s this.lua -- PREFIX`,
-- distinct per wrk invocation), THREAD is unique per wrk thread, COUNTER counts per thread.
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  prefix = (args[1] or "device") .. "-" .. tostring(thread_number) .. "-"
  counter = 0
end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, { ["X-Device-ID"] = prefix .. counter })
end
