--[[
job_submit.lua for toposched slurm-bridge (docs/live.md).

Holds every job submitted to the partition the bridge manages (priority 0 = held), so that
Slurm's own scheduler leaves it alone; the bridge chooses its nodes with the toposched
service, sets them (scontrol update jobid=J ReqNodeList=...) and releases the job
(scontrol release J).

Install beside slurm.conf as job_submit.lua, with "JobSubmitPlugins=lua" in slurm.conf.
Set TOPOSCHED_PARTITION to the partition name; jobs that name no partition are held too
when that partition is the default one (TOPOSCHED_PARTITION_IS_DEFAULT).
--]]

local TOPOSCHED_PARTITION = "topo"
local TOPOSCHED_PARTITION_IS_DEFAULT = true

local function managed(partition)
   if partition == nil or partition == "" then
      return TOPOSCHED_PARTITION_IS_DEFAULT
   end
   for p in string.gmatch(partition, "[^,]+") do
      if p == TOPOSCHED_PARTITION then
         return true
      end
   end
   return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   if managed(job_desc.partition) then
      job_desc.priority = 0
      slurm.log_info("toposched: holding job from uid %u for the bridge", submit_uid)
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   return slurm.SUCCESS
end

slurm.log_info("toposched job_submit.lua loaded (partition %s)", TOPOSCHED_PARTITION)
return slurm.SUCCESS
