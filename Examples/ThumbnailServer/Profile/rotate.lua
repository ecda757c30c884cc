-- wrk script: each request takes the next path of $PATHS (one per line), so a run never repeats a result.
-- Run wrk with one thread (-t1): the counter is per Lua state, and one state drives every connection.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local index = 0
request = function()
    index = index % #paths + 1
    return wrk.format("GET", paths[index])
end
