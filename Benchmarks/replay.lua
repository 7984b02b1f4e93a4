-- wrk script: sends each pre-signed request (keyvault-bench sign-requests) exactly
-- once, in order; stops the thread when they run out (what wrk still sends then is a
-- GET /health, never a used request), and says so on stderr: wrk
-- still divides by the whole duration, so a run that ran out measured the file's
-- size, not the server (the scripts mark such a rate as a lower bound). Nonces are
-- single use, so a request can never be sent twice.
--   wrk -t1 -c32 -d10s --latency -s Benchmarks/replay.lua URL -- FILE
local requests, index, ranOut = {}, 0, false

function init(args)
  local f = assert(io.open(args[1], "rb"))
  while true do
    local header = f:read("*l")
    if not header then break end
    requests[#requests + 1] = f:read(tonumber(header))
  end
  f:close()
end

function request()
  index = index + 1
  if index > #requests then
    if not ranOut then
      ranOut = true
      io.stderr:write("replay.lua: ran out after all " .. #requests .. " requests\n")
    end
    wrk.thread:stop()
    return wrk.format("GET", "/health")
  end
  return requests[index]
end

local failures = 0
function response(status, headers, body)
  if status >= 300 then
    failures = failures + 1
    if failures <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
  end
end
