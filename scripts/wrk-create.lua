-- wrk script: every request creates a paste of 1 KiB of content no other request sends, so each
-- create stores a new blob (no dedup). Against a serve with the create rate limit off, and no
-- per-client share of the upload slots (wrk is one client):
--   PASTEBIN_RATE_CREATE=off PASTEBIN_MAX_UPLOADS_PER_CLIENT=0 make run
--   wrk -t2 -c32 -d10s --latency -s scripts/wrk-create.lua http://127.0.0.1:8080/ -- "$RANDOM"
-- The argument after -- sets the run apart from earlier ones (each content is then new again).
local counter = 0
local tid = 0
local threads = 0
local pad = string.rep("x", 1024)

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  run = args[1] or tostring(os.time())
end

request = function()
  counter = counter + 1
  local body = (run .. " " .. tid .. " " .. counter .. " " .. pad):sub(1, 1024)
  return wrk.format("POST", "/", {["Content-Type"] = "text/plain"}, body)
end
