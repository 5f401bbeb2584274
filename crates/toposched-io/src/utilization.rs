//! Busy nodes over time, sampled every `step_s` seconds from a run's first submit `t0` to
//! its last end `t1` (utilization.parquet and the summary's mean). A job counts at `t`
//! when `start <= t < end` (a zero-length job never counts; a job with a negative start is
//! ignored, as the engine's own sampler did).
//!
//! Two ways to hold the samples, the same samples either way:
//! * [`UtilizationSeries`] (the whole replay): the instants where the busy count changes
//!   (memory in proportion to the jobs, not to the span: two jobs 300 years apart would
//!   need gigabytes of samples), sampled only when asked, a range at a time.
//! * [`BusySamples`] (the streamed replay): the change of the busy count at each sample
//!   (int32), made as jobs finish; samples no job can change any more are appended to a
//!   spill file, so only those from the oldest held job's submit on stay in memory.
//!
//! The mean is NumPy's `np.mean` of the whole sample array, bit for bit, without making
//! that array: NumPy sums float64 pairwise (halves split at a multiple of 8, blocks of at
//! most 128 summed in eight lanes), and [`pairwise_mean`] sums the same halves, a chunk of
//! samples at a time. `toposched.utilization` is the Python face of this module.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// Samples per chunk: the pieces the mean and the streamed file are made of (and the
/// row-group size of utilization.parquet, Python side).
pub const CHUNK_SAMPLES: u64 = 1 << 20;

/// Final samples a [`BusySamples`] writes out at once by default.
pub const SPILL_SAMPLES: u64 = 1 << 20;

/// NumPy's pairwise block (PW_BLOCKSIZE).
const PW_BLOCK: usize = 128;

/// Samples from t0 to t1 inclusive every step_s (0 when t1 < t0).
pub fn n_samples(t0: i64, t1: i64, step_s: i64) -> u64 {
    if t1 >= t0 {
        ((i128::from(t1) - i128::from(t0)) / i128::from(step_s) + 1) as u64
    } else {
        0
    }
}

/// The first sample at or after instant `t` (may be negative: before t0).
#[inline]
fn first_sample(t: i64, t0: i64, step_s: i64) -> i64 {
    // ceil((t - t0) / step) as -floor((t0 - t) / step), in i128: no overflow at the limits
    (-(i128::from(t0) - i128::from(t)).div_euclid(i128::from(step_s))) as i64
}

/// NumPy's pairwise sum of a float64 array (`DOUBLE_pairwise_sum`).
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = 0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= PW_BLOCK {
        let mut r = [a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]];
        let whole = n - n % 8;
        let mut i = 8;
        while i < whole {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[whole..] {
            res += x;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

/// `np.mean(busy / max(n_nodes, 1))` over `n` samples read by `busy_at(k0, k1)`, chunk by
/// chunk of at most [`CHUNK_SAMPLES`] (None: no sample).
pub fn pairwise_mean<E>(n: u64, n_nodes: i64, busy_at: &mut impl FnMut(u64, u64) -> Result<Vec<i64>, E>) -> Result<Option<f64>, E> {
    if n == 0 {
        return Ok(None);
    }
    Ok(Some(pairwise_part(0, n, n_nodes.max(1) as f64, busy_at)? / n as f64))
}

fn pairwise_part<E>(k0: u64, n: u64, nodes: f64, busy_at: &mut impl FnMut(u64, u64) -> Result<Vec<i64>, E>) -> Result<f64, E> {
    if n <= CHUNK_SAMPLES {
        // (collected in place: the counts' buffer becomes the utilization's)
        let u: Vec<f64> = busy_at(k0, k0 + n)?.into_iter().map(|b| b as f64 / nodes).collect();
        // (NumPy's reduction adds the sum to its identity, 0.0)
        return Ok(0.0 + pairwise_sum(&u));
    }
    let mut half = n / 2;
    half -= half % 8;
    Ok(pairwise_part(k0, half, nodes, busy_at)? + pairwise_part(k0 + half, n - half, nodes, busy_at)?)
}

/// Busy nodes as a step function: `busy[i]` nodes are busy from `change_s[i]` until
/// `change_s[i + 1]` (0 before the first change).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UtilizationSeries {
    pub change_s: Vec<i64>,
    pub busy: Vec<i64>,
    pub t0: i64,
    pub t1: i64,
    pub step_s: i64,
    pub n_nodes: i64,
}

impl UtilizationSeries {
    /// The step function of jobs (start, end, nodes), sampled at t0, t0 + step_s, ... up
    /// to t1 inclusive.
    pub fn from_jobs(start_s: &[i64], end_s: &[i64], nodes: &[i64], t0: i64, t1: i64, step_s: i64, n_nodes: i64) -> Result<UtilizationSeries, String> {
        if step_s <= 0 {
            return Err("step_s must be positive".into());
        }
        if start_s.len() != end_s.len() || start_s.len() != nodes.len() {
            return Err("start_s, end_s and nodes differ in length".into());
        }
        let mut events: Vec<(i64, i64)> = Vec::with_capacity(2 * start_s.len());
        for i in 0..start_s.len() {
            if start_s[i] >= 0 && end_s[i] > start_s[i] {
                events.push((start_s[i], nodes[i]));
                events.push((end_s[i], nodes[i].wrapping_neg()));
            }
        }
        // the level after all the changes at an instant is all that counts: their order
        // within it does not matter
        events.sort_unstable_by_key(|e| e.0);
        let mut change_s: Vec<i64> = Vec::new();
        let mut busy: Vec<i64> = Vec::new();
        let mut level = 0i64;
        for (i, &(t, d)) in events.iter().enumerate() {
            level = level.wrapping_add(d);
            if i + 1 == events.len() || events[i + 1].0 != t {
                change_s.push(t);
                busy.push(level);
            }
        }
        Ok(UtilizationSeries { change_s, busy, t0, t1, step_s, n_nodes })
    }

    pub fn n_samples(&self) -> u64 {
        n_samples(self.t0, self.t1, self.step_s)
    }

    /// Busy nodes at samples `k0 <= k < k1`.
    pub fn busy_at(&self, k0: u64, k1: u64) -> Vec<i64> {
        series_busy_at(&self.change_s, &self.busy, self.t0, self.step_s, k0, k1)
    }

    /// The mean utilization over the samples (None: none).
    pub fn mean(&self) -> Option<f64> {
        pairwise_mean::<()>(self.n_samples(), self.n_nodes, &mut |a, b| Ok(self.busy_at(a, b))).expect("no error in memory")
    }
}

/// Busy nodes at samples `k0 <= k < k1` of the step function (`change_s` ascending,
/// `busy` the level from each change on): change i holds from the first sample at or
/// after it, so each level is repeated over its run of samples.
pub fn series_busy_at(change_s: &[i64], busy: &[i64], t0: i64, step_s: i64, k0: u64, k1: u64) -> Vec<i64> {
    if k1 <= k0 {
        return Vec::new();
    }
    let (k0i, k1i) = (k0 as i64, k1 as i64);
    let first_k = |i: usize| first_sample(change_s[i], t0, step_s);
    // changes in force at k0: [.., lo)
    let lo = change_s.partition_point(|&c| first_sample(c, t0, step_s) <= k0i);
    let mut out = Vec::with_capacity((k1 - k0) as usize);
    let mut level = if lo > 0 { busy[lo - 1] } else { 0 };
    let mut i = lo;
    let mut k = k0i;
    while k < k1i {
        // the run of `level` lasts until the next change's first sample
        let next = if i < change_s.len() { first_k(i).min(k1i) } else { k1i };
        if next > k {
            out.resize(out.len() + (next - k) as usize, level);
            k = next;
        }
        if i < change_s.len() && k < k1i {
            level = busy[i];
            i += 1;
        }
    }
    out
}

/// The samples of a streamed replay as the change of the busy count at each sample,
/// made as its jobs finish ([`BusySamples::add`]): the samples of [`UtilizationSeries`]
/// of the same jobs, bit for bit. A change is at most the fabric's node count either way
/// (below 2^31), so int32 holds it; adding wraps modulo 2^32 on the way, which leaves the
/// sum exact. Samples before `base` are in the spill file (4 bytes each, little-endian).
#[derive(Debug)]
pub struct BusySamples {
    pub t0: i64,
    pub t1: i64,
    pub step_s: i64,
    pub n_nodes: i64,
    /// busy[k] - busy[k - 1], from sample `base`
    delta: Vec<i32>,
    base: u64,
    spill: Option<PathBuf>,
    /// (k, busy before sample k): samples are read in ascending order
    cursor: (u64, i64),
}

impl BusySamples {
    pub fn new(t0: i64, step_s: i64, n_nodes: i64, spill: Option<PathBuf>) -> Result<BusySamples, String> {
        if step_s <= 0 {
            return Err("step_s must be positive".into());
        }
        Ok(BusySamples { t0, t1: t0 - 1, step_s, n_nodes, delta: vec![0; 1024], base: 0, spill, cursor: (0, 0) })
    }

    /// Samples before it are in the spill file.
    pub fn base(&self) -> u64 {
        self.base
    }

    pub fn n_samples(&self) -> u64 {
        n_samples(self.t0, self.t1, self.step_s)
    }

    /// Finished jobs; `t1` becomes the latest end so far.
    pub fn add(&mut self, start_s: &[i64], end_s: &[i64], nodes: &[i64]) -> Result<(), String> {
        if start_s.len() != end_s.len() || start_s.len() != nodes.len() {
            return Err("start_s, end_s and nodes differ in length".into());
        }
        if let Some(&m) = end_s.iter().max() {
            self.t1 = self.t1.max(m);
        }
        let mut changes: Vec<(i64, i64, i32)> = Vec::new();
        for i in 0..start_s.len() {
            if start_s[i] >= 0 && end_s[i] > start_s[i] {
                // the first sample at or after each instant (samples before t0 count from 0)
                let k0 = first_sample(start_s[i], self.t0, self.step_s).max(0) - self.base as i64;
                let k1 = first_sample(end_s[i], self.t0, self.step_s).max(0) - self.base as i64;
                if k0 < 0 {
                    return Err("a job starts in samples already written out (final_before was wrong)".into());
                }
                changes.push((k0, k1, nodes[i] as i32));
            }
        }
        let need_jobs = changes.iter().map(|c| c.1 + 1).max().unwrap_or(0);
        let need = need_jobs.max(self.n_samples() as i64 + 1 - self.base as i64).max(0) as usize;
        if need > self.delta.len() {
            let grown = need.max(self.delta.len() * 5 / 4);
            self.delta.resize(grown, 0);
        }
        for (k0, k1, w) in changes {
            self.delta[k0 as usize] = self.delta[k0 as usize].wrapping_add(w);
            self.delta[k1 as usize] = self.delta[k1 as usize].wrapping_sub(w);
        }
        self.cursor = (0, 0);
        Ok(())
    }

    /// No job added from now on counts at a sample before `k`: once at least
    /// `spill_samples` of them are held, they are appended to the spill file.
    pub fn final_before(&mut self, k: i64, spill_samples: u64) -> std::io::Result<()> {
        let m = (k - self.base as i64).min(self.delta.len() as i64);
        let Some(path) = &self.spill else { return Ok(()) };
        if m <= 0 || (m as u64) < spill_samples {
            return Ok(());
        }
        let m = m as usize;
        let bytes: Vec<u8> = self.delta[..m].iter().flat_map(|d| d.to_le_bytes()).collect();
        OpenOptions::new().create(true).append(true).open(path)?.write_all(&bytes)?;
        self.delta.drain(..m);
        self.base += m as u64;
        Ok(())
    }

    /// The changes at samples `a <= k < b`, from the file or memory (fewer when past the end).
    fn changes(&self, a: u64, b: u64) -> std::io::Result<Vec<i32>> {
        let mut out = Vec::with_capacity(b.saturating_sub(a) as usize);
        if a < self.base {
            let path = self.spill.as_ref().expect("samples written out have a file");
            let n = (b.min(self.base) - a) as usize;
            let mut f = File::open(path)?;
            f.seek(SeekFrom::Start(4 * a))?;
            let mut buf = Vec::with_capacity(4 * n);
            f.take(4 * n as u64).read_to_end(&mut buf)?;
            out.extend(buf.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        }
        if b > self.base {
            let lo = (a.max(self.base) - self.base) as usize;
            let hi = ((b - self.base) as usize).min(self.delta.len());
            if lo < hi {
                out.extend_from_slice(&self.delta[lo..hi]);
            }
        }
        Ok(out)
    }

    /// Busy nodes at samples `k0 <= k < k1`.
    pub fn busy_at(&mut self, k0: u64, k1: u64) -> std::io::Result<Vec<i64>> {
        if k1 <= k0 {
            return Ok(Vec::new());
        }
        let (mut k, mut level) = self.cursor;
        if k0 < k {
            (k, level) = (0, 0);
        }
        while k < k0 {
            // in pieces: the file's part need not fit in memory
            let b = (k + CHUNK_SAMPLES).min(k0);
            level += self.changes(k, b)?.iter().map(|&d| i64::from(d)).sum::<i64>();
            k = b;
        }
        let mut busy = Vec::with_capacity((k1 - k0) as usize);
        for d in self.changes(k0, k1)? {
            level += i64::from(d);
            busy.push(level);
        }
        self.cursor = (k0 + busy.len() as u64, level);
        Ok(busy)
    }

    /// The mean utilization over the samples (None: none).
    pub fn mean(&mut self) -> std::io::Result<Option<f64>> {
        let (n, nodes) = (self.n_samples(), self.n_nodes);
        pairwise_mean(n, nodes, &mut |a, b| self.busy_at(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reference: each sample counted from the jobs directly (the per-sample rule).
    fn sampled(start: &[i64], end: &[i64], nodes: &[i64], t0: i64, t1: i64, step: i64) -> Vec<i64> {
        (0..n_samples(t0, t1, step) as i64)
            .map(|k| {
                let t = t0 + k * step;
                (0..start.len()).filter(|&i| start[i] >= 0 && start[i] <= t && t < end[i]).map(|i| nodes[i]).sum()
            })
            .collect()
    }

    fn jobs() -> impl Strategy<Value = Vec<(i64, i64, i64)>> {
        prop::collection::vec((-20i64..400, 0i64..200, 1i64..64), 0..30)
    }

    proptest! {
        #[test]
        fn series_and_streamed_samples_are_the_per_sample_rule(jobs in jobs(), t0 in -10i64..100, span in -1i64..700, step in 1i64..90, cut in 0usize..30) {
            let start: Vec<i64> = jobs.iter().map(|j| j.0).collect();
            let end: Vec<i64> = jobs.iter().map(|j| j.0 + j.1).collect();
            let nodes: Vec<i64> = jobs.iter().map(|j| j.2).collect();
            let t1 = t0 + span;
            let want = sampled(&start, &end, &nodes, t0, t1, step);
            let s = UtilizationSeries::from_jobs(&start, &end, &nodes, t0, t1, step, 64).unwrap();
            prop_assert_eq!(s.n_samples() as usize, want.len());
            prop_assert_eq!(&s.busy_at(0, s.n_samples()), &want);
            let n = want.len() as u64;
            for (a, b) in [(n / 2, n), (1, 3), (0, 0)] {
                if a <= b && b <= n {
                    prop_assert_eq!(&s.busy_at(a, b), &want[a as usize..b as usize].to_vec());
                }
            }
            // streamed: jobs in two batches, the samples of both
            let mut b = BusySamples::new(t0, step, 64, None).unwrap();
            let c = cut.min(jobs.len());
            b.add(&start[..c], &end[..c], &nodes[..c]).unwrap();
            b.add(&start[c..], &end[c..], &nodes[c..]).unwrap();
            let t1b = end.iter().copied().max().unwrap_or(t0 - 1).max(t0 - 1);
            prop_assert_eq!(b.t1, t1b);
            let want_b = sampled(&start, &end, &nodes, t0, t1b, step);
            prop_assert_eq!(&b.busy_at(0, b.n_samples()).unwrap(), &want_b);
        }
    }

    #[test]
    fn pairwise_sum_is_numpys_order() {
        // 1e16 + 1 + 1 ... : where the pairs fall decides the sum; NumPy's blocks of 8 lanes
        let mut a = vec![1.0; 300];
        a[0] = 1e16;
        let lanes = {
            // first block of 128 (300 -> 144 + 156 -> 72 + 72 | 72 + 84): recompute by hand
            fn block(a: &[f64]) -> f64 {
                let mut r = [0.0; 8];
                r.copy_from_slice(&a[..8]);
                let whole = a.len() - a.len() % 8;
                for i in (8..whole).step_by(8) {
                    for j in 0..8 {
                        r[j] += a[i + j];
                    }
                }
                let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
                for &x in &a[whole..] {
                    res += x;
                }
                res
            }
            (block(&a[..72]) + block(&a[72..144])) + (block(&a[144..216]) + block(&a[216..]))
        };
        assert_eq!(pairwise_sum(&a).to_bits(), lanes.to_bits());
    }

    #[test]
    fn spilled_samples_read_back() {
        let dir = std::env::temp_dir().join(format!("toposched-io-busy-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let mut b = BusySamples::new(0, 1, 8, Some(dir.clone())).unwrap();
        b.add(&[0, 5], &[10, 7], &[2, 3]).unwrap();
        b.final_before(4, 1).unwrap();
        assert_eq!(b.base(), 4);
        b.add(&[6], &[9], &[1]).unwrap();
        assert_eq!(b.busy_at(0, 11).unwrap(), vec![2, 2, 2, 2, 2, 5, 6, 3, 3, 2, 0]);
        assert!(b.add(&[2], &[3], &[1]).unwrap_err().contains("already written out"));
        std::fs::remove_file(&dir).unwrap();
    }
}
