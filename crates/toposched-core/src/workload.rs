//! The job table the engine replays. Readers (Python side) normalize logs into it; here
//! we only check the promises the engine relies on.

/// One job to replay. Times are whole seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// Id in the log (reported back, never interpreted).
    pub id: i64,
    /// Submit time.
    pub submit_s: i64,
    /// Nodes requested.
    pub nodes: u32,
    /// Requested time (limit): drives reservations and backfilling.
    pub walltime_s: i64,
    /// Run time the log recorded; the engine clips it to `walltime_s` unless jobs may run on.
    pub runtime_s: i64,
}

/// Check the table: submits sorted, at least one node, a positive limit, a run time >= 0.
/// The error names the row (0-based, in replay order) and the field.
pub fn validate(jobs: &[Job]) -> Result<(), String> {
    for (i, j) in jobs.iter().enumerate() {
        if j.nodes == 0 {
            return Err(format!("job row {i} (id {}): field 'nodes' must be >= 1", j.id));
        }
        if j.walltime_s < 1 {
            return Err(format!("job row {i} (id {}): field 'walltime_s' must be >= 1, got {}", j.id, j.walltime_s));
        }
        if j.runtime_s < 0 {
            return Err(format!("job row {i} (id {}): field 'runtime_s' must be >= 0, got {}", j.id, j.runtime_s));
        }
        if i > 0 && j.submit_s < jobs[i - 1].submit_s {
            return Err(format!(
                "job row {i} (id {}): field 'submit_s' is {} but the row before has {}; rows must be sorted by submit time",
                j.id,
                j.submit_s,
                jobs[i - 1].submit_s
            ));
        }
    }
    Ok(())
}
