//! The summary's statistics of the finished jobs (mean, median, p95 and max of the wait,
//! the bounded slowdown and the APH, over all jobs and per size bin), computed from
//! chunks of the job columns, so that a streamed replay never holds every value at once,
//! and the same code serves the whole replay: both write the same summary.json, bit for
//! bit. `toposched.summary_stats` is the Python face of this module.
//!
//! * **Counts and maxima** are exact.
//! * **Means** come from an exact sum and one rounding (`exact.rs`): the exact rational
//!   mean correctly rounded, as Python's `int / int` of the exact sum gave.
//! * **Median and p95** are NumPy's `np.median(x)` and `np.percentile(x, 95)` (linear
//!   interpolation between the two order statistics around `0.95 * (n - 1)`, with NumPy's
//!   own formula), the order statistics found exactly: from the keys themselves while the
//!   run keeps them (the whole replay always; a streamed one up to `keep_rows` rows), else
//!   by a radix selection over the rows read again (`SummaryStats::finish`'s `again`):
//!   each pass counts the next 16 bits of the order-preserving keys that share the digits
//!   already found (or gathers them when at most `gather_keys` remain). At most four
//!   passes, memory 65,536 counts per group and rank. -0.0 and 0.0 are one key, so a
//!   median, p95 or max that is a zero is 0.0.
//! * **NaN**: a column holding NaN has NaN statistics, as with NumPy; the APH's NaN ("no
//!   APH") is left out before (the caller's rows keep it; this module skips it).

use crate::exact::{BigInt, ExactFloatSum};

/// Job-size bins of the summary: (label, smallest, largest nodes).
pub const SIZE_BINS: [(&str, i64, i64); 9] = [
    ("1", 1, 1),
    ("2-4", 2, 4),
    ("5-16", 5, 16),
    ("17-64", 17, 64),
    ("65-128", 65, 128),
    ("129-256", 129, 256),
    ("257-512", 257, 512),
    ("513-1024", 513, 1024),
    (">1024", 1025, 1 << 62),
];

/// Groups: 0 = jobs in no bin (no nodes), 1..=9 the bins, 10 every job.
const N_GROUPS: usize = SIZE_BINS.len() + 2;
const ALL: usize = N_GROUPS - 1;
/// Columns: wait_s (int64), bounded_slowdown, aph (float64).
const WAIT: usize = 0;
const BSLD: usize = 1;
const APH: usize = 2;

/// np.percentile's q for p95: np.true_divide(95, 100), the double nearest 0.95.
const Q95: f64 = 0.95;
const SIGN: u64 = 1 << 63;
const DIGIT_BITS: u32 = 16;

/// The rows the streamed replay's accumulators keep every key of (24 bytes a row) by
/// default: their medians and p95s then need no pass over the rows again.
pub const KEEP_ROWS: u64 = 1 << 19;
/// A selection bucket of at most this many keys is gathered in one pass (default).
pub const GATHER_KEYS: u64 = 1 << 19;

/// Some finished jobs' columns (equal lengths); `aph` NaN: the job has none.
#[derive(Clone, Copy, Debug)]
pub struct Chunk<'a> {
    pub wait_s: &'a [i64],
    pub bounded_slowdown: &'a [f64],
    pub aph: &'a [f64],
    pub nodes: &'a [i64],
}

impl Chunk<'_> {
    fn len(&self) -> usize {
        self.nodes.len()
    }

    fn check(&self) {
        let n = self.len();
        assert!(
            self.wait_s.len() == n && self.bounded_slowdown.len() == n && self.aph.len() == n,
            "summary statistics: the chunk's columns differ in length"
        );
    }
}

/// mean, median, p95 and max of one column in one group (None: no value).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub p95: Option<f64>,
    pub max: Option<f64>,
}

/// One size bin's block of the summary (`by_size`).
#[derive(Clone, Debug, PartialEq)]
pub struct SizeBin {
    pub bin: &'static str,
    pub min_nodes: i64,
    pub max_nodes: i64,
    pub jobs: u64,
    pub wait_s: Stats,
    pub bounded_slowdown: Stats,
    pub aph: Stats,
}

/// The summary's `wait_s`, `bounded_slowdown`, `aph` and `by_size` blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct Statistics {
    pub wait_s: Stats,
    pub bounded_slowdown: Stats,
    pub aph: Stats,
    /// the bins that hold jobs, in bin order
    pub by_size: Vec<SizeBin>,
}

/// Order-preserving key of an int64.
#[inline]
pub fn int_key(v: i64) -> u64 {
    (v as u64) ^ SIGN
}

/// Order-preserving key of a double without NaN (-0.0 has 0.0's key).
#[inline]
pub fn float_key(v: f64) -> u64 {
    let bits = if v == 0.0 { 0 } else { v.to_bits() };
    if bits & SIGN != 0 {
        !bits
    } else {
        bits | SIGN
    }
}

fn int_of_key(k: u64) -> i64 {
    (k ^ SIGN) as i64
}

fn float_of_key(k: u64) -> f64 {
    f64::from_bits(if k & SIGN != 0 { k ^ SIGN } else { !k })
}

/// The group (1..=9, 0: in no bin) of a job of `nodes` nodes.
pub fn size_bin(nodes: i64) -> usize {
    SIZE_BINS.iter().position(|&(_, lo, hi)| nodes >= lo && nodes <= hi).map_or(0, |b| b + 1)
}

/// Count, exact sum, extremes and NaN of one column in one group, and its keys while kept.
#[derive(Clone, Debug)]
struct Acc {
    float: bool,
    n: u64,
    int_total: i128,
    float_total: Option<ExactFloatSum>,
    nan: bool,
    pos_inf: bool,
    neg_inf: bool,
    key_min: u64,
    key_max: u64,
    any_key: bool,
    keys: Vec<u64>,
}

impl Acc {
    fn new(float: bool) -> Acc {
        Acc {
            float,
            n: 0,
            int_total: 0,
            float_total: float.then(ExactFloatSum::default),
            nan: false,
            pos_inf: false,
            neg_inf: false,
            key_min: u64::MAX,
            key_max: 0,
            any_key: false,
            keys: Vec::new(),
        }
    }

    #[inline]
    fn key(&mut self, key: u64, keep: bool) {
        self.key_min = self.key_min.min(key);
        self.key_max = self.key_max.max(key);
        self.any_key = true;
        if keep {
            self.keys.push(key);
        }
    }

    #[inline]
    fn add_int(&mut self, v: i64, keep: bool) {
        self.n += 1;
        self.int_total += i128::from(v);
        self.key(int_key(v), keep);
    }

    #[inline]
    fn add_float(&mut self, v: f64, keep: bool) {
        self.n += 1;
        if v.is_nan() {
            self.nan = true;
            return;
        }
        if v.is_finite() {
            self.float_total.as_mut().expect("a float column").add(v);
        } else if v > 0.0 {
            self.pos_inf = true;
        } else {
            self.neg_inf = true;
        }
        self.key(float_key(v), keep);
    }

    fn mean(&self) -> f64 {
        if !self.float {
            return BigInt::from_i128(self.int_total).ratio(self.n, 0);
        }
        if self.nan || (self.pos_inf && self.neg_inf) {
            return f64::NAN;
        }
        if self.pos_inf {
            return f64::INFINITY;
        }
        if self.neg_inf {
            return f64::NEG_INFINITY;
        }
        self.float_total.as_ref().expect("a float column").mean(self.n)
    }

    fn value(&self, key: u64) -> Value {
        if self.float {
            Value::F(float_of_key(key))
        } else {
            Value::I(int_of_key(key))
        }
    }
}

/// An order statistic as the column's type.
#[derive(Clone, Copy, Debug)]
enum Value {
    I(i64),
    F(f64),
}

impl Value {
    fn as_f64(self) -> f64 {
        match self {
            Value::I(v) => v as f64,
            Value::F(v) => v,
        }
    }
}

/// Positions (0-based, ascending order) of the median's and the p95's order statistics.
fn ranks(n: u64) -> (Vec<u64>, Vec<u64>) {
    let median = if n % 2 == 1 { vec![n / 2] } else { vec![n / 2 - 1, n / 2] };
    let v = (n - 1) as f64 * Q95;
    let p95 = if v >= (n - 1) as f64 {
        vec![n - 1]
    } else {
        let lo = v.floor() as u64;
        vec![lo, lo + 1]
    };
    (median, p95)
}

/// np.median of the middle order statistic(s): NumPy's mean of them (a float64 sum
/// from 0.0, then one division; past the float limit, infinity).
fn median_of(values: &[Value]) -> f64 {
    let sum = values.iter().fold(0.0f64, |s, v| s + v.as_f64());
    sum / values.len() as f64
}

/// np.percentile(x, 95) from the order statistics around `0.95 * (n - 1)`: NumPy's
/// `_lerp` (`a + (b - a) * t` below t = 0.5, `b - (b - a) * (1 - t)` from it), the
/// difference of two int64 wrapping as NumPy's arrays do.
fn p95_of(values: &[Value], n: u64) -> f64 {
    let (a, b, t) = if values.len() == 1 {
        (values[0], values[0], 1.0) // n = 1: NumPy's weight is then 1.0
    } else {
        let v = (n - 1) as f64 * Q95;
        (values[0], values[1], v - v.floor())
    };
    let diff = match (a, b) {
        (Value::I(a), Value::I(b)) => b.wrapping_sub(a) as f64,
        _ => b.as_f64() - a.as_f64(),
    };
    if t >= 0.5 {
        b.as_f64() - diff * (1.0 - t)
    } else {
        a.as_f64() + diff * t
    }
}

/// Accumulators of the summary's statistics: [`SummaryStats::add`] each chunk of
/// finished jobs (any split), then [`SummaryStats::finish`].
#[derive(Clone, Debug)]
pub struct SummaryStats {
    groups: Vec<Option<[Acc; 3]>>,
    nodes_max: [i64; N_GROUPS],
    rows: u64,
    /// keep every key however many rows (the whole replay), not only up to keep_rows
    keep_all: bool,
    /// the keys were dropped (more rows than keep_rows): selection by passes
    dropped: bool,
}

impl SummaryStats {
    pub fn new(keep_all: bool) -> SummaryStats {
        SummaryStats { groups: vec![None; N_GROUPS], nodes_max: [i64::MIN; N_GROUPS], rows: 0, keep_all, dropped: false }
    }

    /// Rows added so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds a chunk of finished jobs; keys are kept while at most `keep_rows` rows have
    /// been added (or always, with `keep_all`).
    pub fn add(&mut self, chunk: Chunk<'_>, keep_rows: u64) {
        chunk.check();
        if chunk.len() == 0 {
            return;
        }
        self.rows += chunk.len() as u64;
        if !self.keep_all && self.rows > keep_rows && !self.dropped {
            self.dropped = true;
            for accs in self.groups.iter_mut().flatten() {
                for acc in accs.iter_mut() {
                    acc.keys = Vec::new();
                }
            }
        }
        let keep = !self.dropped;
        for i in 0..chunk.len() {
            let g = size_bin(chunk.nodes[i]);
            self.nodes_max[g] = self.nodes_max[g].max(chunk.nodes[i]);
            for group in [g, ALL] {
                let accs = self.groups[group].get_or_insert_with(|| [Acc::new(false), Acc::new(true), Acc::new(true)]);
                accs[WAIT].add_int(chunk.wait_s[i], keep);
                accs[BSLD].add_float(chunk.bounded_slowdown[i], keep);
                let aph = chunk.aph[i];
                if !aph.is_nan() {
                    accs[APH].add_float(aph, keep);
                }
            }
        }
    }

    /// Whether [`SummaryStats::finish`] will read the rows again (the keys were dropped).
    pub fn needs_passes(&self) -> bool {
        self.dropped
    }

    /// The statistics. `again(f)` must call `f` on the same rows as were added, chunk by
    /// chunk in any split; it is called only when the keys were dropped (at most four
    /// times); its error ends the selection. A bucket of at most `gather_keys` keys is
    /// gathered in one pass instead of counted 16 bits at a time.
    /// The kept keys are reordered (selected in place).
    pub fn finish<E>(&mut self, gather_keys: u64, mut again: impl FnMut(&mut dyn FnMut(Chunk<'_>)) -> Result<(), E>) -> Result<Statistics, E> {
        // found[(g, c)]: position -> key relative to the group's smallest
        let mut found: Vec<Vec<(u64, u64)>> = vec![Vec::new(); N_GROUPS * 3];
        let mut targets: Vec<Target> = Vec::new();
        let dropped = self.dropped;
        for (g, accs) in self.groups.iter_mut().enumerate() {
            let Some(accs) = accs else { continue };
            if g == 0 {
                continue; // jobs in no bin count in the whole only
            }
            for (c, acc) in accs.iter_mut().enumerate() {
                if acc.n == 0 || acc.nan || !acc.any_key {
                    continue;
                }
                let (median, p95) = ranks(acc.n);
                let mut positions: Vec<u64> = median.into_iter().chain(p95).collect();
                positions.sort_unstable();
                positions.dedup();
                if !dropped {
                    for &p in &positions {
                        let (_, k, _) = acc.keys.select_nth_unstable(p as usize);
                        found[g * 3 + c].push((p, *k - acc.key_min));
                    }
                } else {
                    let bits = 64 - (acc.key_max - acc.key_min).leading_zeros();
                    for &p in &positions {
                        targets.push(Target { group: g, column: c, position: p, rank: p, count: acc.n, low_bits: bits, known: 0 });
                    }
                }
            }
        }
        if !targets.is_empty() {
            let key_min: Vec<u64> = (0..N_GROUPS * 3)
                .map(|i| self.groups[i / 3].as_ref().map_or(0, |a| a[i % 3].key_min))
                .collect();
            select(&mut targets, &key_min, gather_keys, &mut again)?;
            for t in &targets {
                found[t.group * 3 + t.column].push((t.position, t.known));
            }
        }
        let stats = |g: usize, c: usize| -> Stats {
            let Some(accs) = &self.groups[g] else { return Stats::default() };
            let acc = &accs[c];
            if acc.n == 0 {
                return Stats::default();
            }
            if acc.nan {
                let nan = Some(f64::NAN);
                return Stats { mean: nan, median: nan, p95: nan, max: nan };
            }
            let at = |p: u64| -> Value {
                let rel = found[g * 3 + c].iter().find(|x| x.0 == p).expect("every rank selected").1;
                acc.value(acc.key_min + rel)
            };
            let (median, p95) = ranks(acc.n);
            let median: Vec<Value> = median.into_iter().map(at).collect();
            let p95: Vec<Value> = p95.into_iter().map(at).collect();
            Stats {
                mean: Some(acc.mean()),
                median: Some(median_of(&median)),
                p95: Some(p95_of(&p95, acc.n)),
                max: Some(acc.value(acc.key_max).as_f64()),
            }
        };
        let mut by_size = Vec::new();
        for (b, &(label, lo, hi)) in SIZE_BINS.iter().enumerate() {
            let g = b + 1;
            let Some(accs) = &self.groups[g] else { continue };
            by_size.push(SizeBin {
                bin: label,
                min_nodes: lo,
                max_nodes: hi.min(self.nodes_max[g]),
                jobs: accs[WAIT].n,
                wait_s: stats(g, WAIT),
                bounded_slowdown: stats(g, BSLD),
                aph: stats(g, APH),
            });
        }
        Ok(Statistics { wait_s: stats(ALL, WAIT), bounded_slowdown: stats(ALL, BSLD), aph: stats(ALL, APH), by_size })
    }
}

/// One order statistic being selected: `position` among the group's values, its `rank`
/// among the keys that share the high bits found so far, `count` of those keys; `known`
/// is its key relative to the group's smallest, shifted right by `low_bits` (0: found).
#[derive(Clone, Debug)]
struct Target {
    group: usize,
    column: usize,
    position: u64,
    rank: u64,
    count: u64,
    low_bits: u32,
    known: u64,
}

/// Keys of one (group, column) sharing the high bits `known` above `low_bits`.
#[derive(Clone, Debug)]
struct Bucket {
    group: usize,
    column: usize,
    known: u64,
    low_bits: u32,
    gather: bool,
    gathered: Vec<u64>,
    hist: Vec<u64>,
}

impl Bucket {
    #[inline]
    fn take(&mut self, rel: u64) {
        let low = self.low_bits;
        if low < 64 && rel >> low != self.known {
            return;
        }
        let low_part = if low < 64 { rel & ((1u64 << low) - 1) } else { rel };
        if self.gather {
            self.gathered.push(low_part);
        } else {
            let width = DIGIT_BITS.min(low);
            self.hist[((low_part >> (low - width)) & ((1u64 << width) - 1)) as usize] += 1;
        }
    }
}

/// Radix selection: passes over the rows, each counting the next 16 bits of the keys that
/// share the bits found so far (or gathering them, when few), until every target's key
/// is known.
fn select<E>(targets: &mut [Target], key_min: &[u64], gather_keys: u64, again: &mut impl FnMut(&mut dyn FnMut(Chunk<'_>)) -> Result<(), E>) -> Result<(), E> {
    loop {
        let mut buckets: Vec<Bucket> = Vec::new();
        for t in targets.iter() {
            if t.low_bits == 0 {
                continue;
            }
            let same = |b: &Bucket| b.group == t.group && b.column == t.column && b.known == t.known && b.low_bits == t.low_bits;
            if !buckets.iter().any(same) {
                let gather = t.count <= gather_keys;
                let hist = if gather { Vec::new() } else { vec![0u64; 1 << DIGIT_BITS.min(t.low_bits)] };
                buckets.push(Bucket { group: t.group, column: t.column, known: t.known, low_bits: t.low_bits, gather, gathered: Vec::new(), hist });
            }
        }
        if buckets.is_empty() {
            return Ok(());
        }
        // the buckets of each (group, column)
        let mut of: Vec<Vec<usize>> = vec![Vec::new(); N_GROUPS * 3];
        for (i, b) in buckets.iter().enumerate() {
            of[b.group * 3 + b.column].push(i);
        }
        again(&mut |chunk: Chunk<'_>| {
            chunk.check();
            for i in 0..chunk.len() {
                let g = size_bin(chunk.nodes[i]);
                for group in [g, ALL] {
                    for c in [WAIT, BSLD, APH] {
                        let mine = &of[group * 3 + c];
                        if mine.is_empty() {
                            continue;
                        }
                        let key = match c {
                            WAIT => int_key(chunk.wait_s[i]),
                            BSLD => float_key(chunk.bounded_slowdown[i]),
                            _ => {
                                let a = chunk.aph[i];
                                if a.is_nan() {
                                    continue;
                                }
                                float_key(a)
                            }
                        };
                        let rel = key.wrapping_sub(key_min[group * 3 + c]);
                        for &b in mine {
                            buckets[b].take(rel);
                        }
                    }
                }
            }
        })?;
        for t in targets.iter_mut() {
            if t.low_bits == 0 {
                continue;
            }
            let b = buckets
                .iter_mut()
                .find(|b| b.group == t.group && b.column == t.column && b.known == t.known && b.low_bits == t.low_bits)
                .expect("a bucket per target");
            if b.gather {
                let mut low = b.gathered.clone();
                let (_, v, _) = low.select_nth_unstable(t.rank as usize);
                t.known = if t.low_bits >= 64 { *v } else { (t.known << t.low_bits) | *v };
                t.low_bits = 0;
                continue;
            }
            let width = DIGIT_BITS.min(t.low_bits);
            let mut cum = 0u64;
            let mut d = 0usize;
            // the digit whose keys hold rank t.rank: the first with cum > rank
            while cum + b.hist[d] <= t.rank {
                cum += b.hist[d];
                d += 1;
            }
            t.rank -= cum;
            t.count = b.hist[d];
            t.known = if width >= 64 { d as u64 } else { (t.known << width) | d as u64 };
            t.low_bits -= width;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stats_of(chunks: &[Chunk<'_>], keep_all: bool, keep_rows: u64, gather: u64) -> Statistics {
        let mut s = SummaryStats::new(keep_all);
        for &c in chunks {
            s.add(c, keep_rows);
        }
        s.finish::<()>(gather, |f| {
            for &c in chunks {
                f(c);
            }
            Ok(())
        })
        .unwrap()
    }

    /// Reference: a column's statistics from its values sorted (order statistics by
    /// index), the mean as a float sum of exact halves where the values allow it.
    fn sorted_stats(mut v: Vec<f64>) -> (f64, f64, f64) {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        let pos = (n - 1) as f64 * 0.95;
        let lo = pos.floor() as usize;
        let t = pos - pos.floor();
        let p95 = if lo + 1 >= n { v[n - 1] } else if t >= 0.5 { v[lo + 1] - (v[lo + 1] - v[lo]) * (1.0 - t) } else { v[lo] + (v[lo + 1] - v[lo]) * t };
        (median, p95, v[n - 1])
    }

    #[test]
    fn known_values() {
        // p95 at index 0.95 * 5 = 4.75 of 1,2,3,4,5,100 is 5 + 0.75 * 95
        let wait = [5i64, 1, 4, 2, 3, 100];
        let f: Vec<f64> = wait.iter().map(|&x| x as f64).collect();
        let nan = [f64::NAN; 6];
        let nodes = [1i64; 6];
        let c = Chunk { wait_s: &wait, bounded_slowdown: &f, aph: &nan, nodes: &nodes };
        for (keep_all, keep_rows, gather) in [(true, 0, 0), (false, 0, 0), (false, 0, 2), (false, 100, 0)] {
            let s = stats_of(&[c], keep_all, keep_rows, gather);
            assert_eq!(s.wait_s, Stats { mean: Some(115.0 / 6.0), median: Some(3.5), p95: Some(76.25), max: Some(100.0) });
            assert_eq!(s.aph, Stats::default());
            assert_eq!(s.by_size.len(), 1);
            assert_eq!((s.by_size[0].bin, s.by_size[0].jobs, s.by_size[0].max_nodes), ("1", 6, 1));
        }
    }

    #[test]
    fn bins_and_keys() {
        assert_eq!([0, 1, 2, 4, 5, 16, 17, 1024, 1025, 1 << 62, (1 << 62) + 1, -3].map(size_bin), [0, 1, 2, 2, 3, 3, 4, 8, 9, 9, 0, 0]);
        let mut v = [f64::NEG_INFINITY, -1e300, -1.0, -5e-324, 0.0, 5e-324, 1.0, f64::MAX, f64::INFINITY];
        let keys = v.map(float_key);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(float_key(-0.0), float_key(0.0));
        v.iter_mut().for_each(|x| assert_eq!(float_of_key(float_key(*x)).to_bits(), x.to_bits()));
        assert!([i64::MIN, -1, 0, 1, i64::MAX].map(int_key).windows(2).all(|w| w[0] < w[1]));
    }

    fn rows() -> impl Strategy<Value = Vec<(i64, f64, f64, i64)>> {
        let wait = prop_oneof![any::<i64>(), -3i64..3, Just(0i64), Just(i64::MAX), Just(i64::MIN)];
        let f = prop_oneof![any::<f64>(), Just(0.0), Just(-0.0), Just(1.0), Just(f64::INFINITY), Just(f64::NAN), 1.0f64..1e4];
        let aph = prop_oneof![Just(f64::NAN), 0.0f64..6.0, any::<f64>()];
        let nodes = prop::sample::select(vec![0i64, 1, 2, 4, 5, 17, 64, 100, 1024, 1025, 5000]);
        prop::collection::vec((wait, f, aph, nodes), 0..60)
    }

    fn bits(s: &Statistics) -> String {
        // zeros by value (one key), NaN as NaN
        let f = |x: Option<f64>| x.map(|v| if v == 0.0 { 0 } else if v.is_nan() { 1 } else { v.to_bits() });
        let st = |s: &Stats| (f(s.mean), f(s.median), f(s.p95), f(s.max));
        format!(
            "{:?} {:?} {:?} {:?}",
            st(&s.wait_s),
            st(&s.bounded_slowdown),
            st(&s.aph),
            s.by_size.iter().map(|b| (b.bin, b.jobs, b.max_nodes, st(&b.wait_s), st(&b.bounded_slowdown), st(&b.aph))).collect::<Vec<_>>()
        )
    }

    proptest! {
        /// Any split, keys kept or selected by passes (counted or gathered): the same bits.
        #[test]
        fn passes_give_the_kept_keys_statistics(rows in rows(), cuts in prop::collection::vec(0usize..60, 0..6), gather in prop::sample::select(vec![0u64, 2, 1 << 30])) {
            let wait: Vec<i64> = rows.iter().map(|r| r.0).collect();
            let bsld: Vec<f64> = rows.iter().map(|r| r.1).collect();
            let aph: Vec<f64> = rows.iter().map(|r| r.2).collect();
            let nodes: Vec<i64> = rows.iter().map(|r| r.3).collect();
            let n = rows.len();
            let mut b: Vec<usize> = cuts.into_iter().map(|c| c % (n + 1)).chain([0, n]).collect();
            b.sort_unstable();
            b.dedup();
            let chunks: Vec<Chunk> = b.windows(2).map(|w| Chunk { wait_s: &wait[w[0]..w[1]], bounded_slowdown: &bsld[w[0]..w[1]], aph: &aph[w[0]..w[1]], nodes: &nodes[w[0]..w[1]] }).collect();
            let whole = [Chunk { wait_s: &wait, bounded_slowdown: &bsld, aph: &aph, nodes: &nodes }];
            let kept = stats_of(&whole, true, 0, 0);
            prop_assert_eq!(bits(&stats_of(&chunks, false, 0, gather)), bits(&kept));
            prop_assert_eq!(bits(&stats_of(&chunks, false, 1 << 30, gather)), bits(&kept));
        }

        /// Order statistics of finite float columns against the sorted values.
        #[test]
        fn finite_columns_match_sorting(values in prop::collection::vec(-1e6f64..1e6, 1..80)) {
            let n = values.len();
            let wait = vec![0i64; n];
            let aph = vec![f64::NAN; n];
            let nodes = vec![3i64; n];
            let s = stats_of(&[Chunk { wait_s: &wait, bounded_slowdown: &values, aph: &aph, nodes: &nodes }], false, 0, 0);
            let (median, p95, max) = sorted_stats(values.clone());
            let z = |v: f64| if v == 0.0 { 0.0 } else { v };
            prop_assert_eq!(z(s.bounded_slowdown.median.unwrap()).to_bits(), z(median).to_bits());
            prop_assert_eq!(z(s.bounded_slowdown.p95.unwrap()).to_bits(), z(p95).to_bits());
            prop_assert_eq!(z(s.bounded_slowdown.max.unwrap()).to_bits(), z(max).to_bits());
            prop_assert_eq!(s.by_size.len(), 1);
            prop_assert_eq!(s.by_size[0].bin, "2-4");
        }
    }
}
