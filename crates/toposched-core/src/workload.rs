//! The job table the engine replays. Readers (Python side) normalize logs into it; here
//! we only check the promises the engine relies on.

/// One job to replay. Times are whole seconds.
///
/// `user`, `account`, `qos` and `partition` are small ids the readers give (the Workload's
/// `user_id`, `account_id`, `qos_id`, `partition_id` columns; `None` where the log has
/// none). The engine does not interpret them; priority models do (`queue::multifactor`:
/// the QOS factor by `qos`, fair-share by the `(account, user)` association).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// The user (SWF field 12; sacct `User`, as an id).
    pub user: Option<u32>,
    /// The account (sacct `Account`; SWF: the group, field 13).
    pub account: Option<u32>,
    /// The QOS (sacct `QOS`; SWF: the queue, field 15).
    pub qos: Option<u32>,
    /// The partition (sacct `Partition`; SWF field 16).
    pub partition: Option<u32>,
}

/// Largest time (seconds) any field may hold: 2^53 s, about 285 million years. Far
/// beyond any real log (readers keep times within 1970-2200), small enough that the
/// engine's sums of times cannot overflow (see [`validate`]).
pub const MAX_TIME_S: i64 = 1 << 53;

/// Largest instant the replay may reach: the last submit plus every job's longest run
/// (`max(runtime, walltime)`), one after the other, must stay below this. Every time the
/// engine computes (`start + run`, `start + walltime`, reservation ends, `now + 1`) is
/// then at most this plus one limit, far from `i64::MAX` (2^63), so no arithmetic on
/// times can wrap however the policies order the jobs.
pub const MAX_HORIZON_S: i64 = 1 << 61;

/// Check the table: submits sorted, at least one node, a positive limit, a run time >= 0,
/// every time within [`MAX_TIME_S`] and the whole replay within [`MAX_HORIZON_S`].
/// The error names the row (0-based, in replay order) and the field.
pub fn validate(jobs: &[Job]) -> Result<(), String> {
    validate_rows(jobs, &Appended::default()).map(|_| ())
}

/// What the rows appended before a chunk promise to the next one (streamed replays).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Appended {
    /// Rows so far: the first row of the next chunk.
    pub rows: usize,
    /// The last row's submit time.
    pub last_submit_s: Option<i64>,
    /// Sum over the rows so far of `max(runtime, walltime)`: the horizon check's total.
    pub work_s: i128,
}

/// [`validate`] for a chunk appended after `before` (rows named absolutely): the same
/// checks, submits sorted across chunks too, and the horizon check over every row so far
/// with this chunk's last submit. Chunk by chunk this refuses exactly what [`validate`]
/// refuses on the whole table: its horizon condition, for the final last submit, is the
/// strongest of the chunks' (submits only grow). Returns the totals after the chunk.
pub fn validate_rows(jobs: &[Job], before: &Appended) -> Result<Appended, String> {
    let mut prev = before.last_submit_s;
    for (k, j) in jobs.iter().enumerate() {
        let i = before.rows + k;
        for (field, v) in [("submit_s", j.submit_s), ("walltime_s", j.walltime_s), ("runtime_s", j.runtime_s)] {
            if v.unsigned_abs() > MAX_TIME_S as u64 {
                return Err(format!("job row {i} (id {}): field '{field}' is {v} s, beyond the limit of {MAX_TIME_S} s (2^53)", j.id));
            }
        }

        if j.nodes == 0 {
            return Err(format!("job row {i} (id {}): field 'nodes' must be >= 1", j.id));
        }
        if j.walltime_s < 1 {
            return Err(format!("job row {i} (id {}): field 'walltime_s' must be >= 1, got {}", j.id, j.walltime_s));
        }
        if j.runtime_s < 0 {
            return Err(format!("job row {i} (id {}): field 'runtime_s' must be >= 0, got {}", j.id, j.runtime_s));
        }
        if let Some(p) = prev.filter(|&p| j.submit_s < p) {
            return Err(format!(
                "job row {i} (id {}): field 'submit_s' is {} but the row before has {p}; rows must be sorted by submit time",
                j.id, j.submit_s
            ));
        }
        prev = Some(j.submit_s);
    }
    // Worst case: every job runs alone, one after the other, after the last submit.
    let last: i128 = prev.map_or(0, |s| s as i128);
    let mut work = before.work_s;
    for (k, j) in jobs.iter().enumerate() {
        work += j.walltime_s.max(j.runtime_s) as i128;
        if last + work > MAX_HORIZON_S as i128 {
            return Err(format!(
                "job row {} (id {}): field 'runtime_s' ({}) or 'walltime_s' ({}) takes the replay past {MAX_HORIZON_S} s (2^61): \
                 the times would overflow 64-bit seconds",
                before.rows + k,
                j.id,
                j.runtime_s,
                j.walltime_s
            ));
        }
    }
    Ok(Appended { rows: before.rows + jobs.len(), last_submit_s: prev, work_s: work })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(submit_s: i64, walltime_s: i64, runtime_s: i64) -> Job {
        Job { id: 7, submit_s, nodes: 1, walltime_s, runtime_s, ..Default::default() }
    }

    #[test]
    fn huge_times_are_refused_with_row_and_field() {
        assert!(validate(&[job(0, 100, 50), job(10, 100, 50)]).is_ok());
        let e = validate(&[job(0, 100, 50), job((1 << 62) + 5, 100, 50)]).unwrap_err();
        assert!(e.contains("job row 1") && e.contains("'submit_s'"), "{e}");
        let e = validate(&[job(0, 100, 1_000_000_000_000_000_000)]).unwrap_err();
        assert!(e.contains("job row 0") && e.contains("'runtime_s'"), "{e}");
        // each time below the limit, but their sum past the horizon
        let big = MAX_TIME_S;
        let jobs: Vec<Job> = (0..300).map(|_| job(0, big, big)).collect();
        let e = validate(&jobs).unwrap_err();
        assert!(e.contains("job row 256") && e.contains("overflow"), "{e}");
    }
}
