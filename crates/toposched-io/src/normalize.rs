//! A log's raw columns -> the job table the engine replays: the rules of
//! `toposched.workload.normalize` (its module docstring documents them, in order), their
//! repair and skip counts, and their errors, worded exactly as the Python package words
//! them (file, line, field, the flag that changes the outcome).
//!
//! Every reader (SWF, sacct, PBS; whole or streamed) collects the same raw columns,
//! int64 with -1 for unknown, plus the line of each record, and hands them here.

use crate::limits::{years, EPOCH_MAX_S, EPOCH_MIN_S, MAX_COUNT, MAX_SPAN_LONG_S, MAX_SPAN_S, MAX_TIME_S};

/// Out-of-range records quoted (with `lenient`) in the settings' `out_of_range_examples`;
/// the rest are only counted.
pub const MAX_EXAMPLES: usize = 5;

/// The largest id of a user, account, QOS or partition (the engine's ids are 32-bit).
pub const MAX_ID: i64 = (1 << 32) - 2;

/// The raw columns' names, as `toposched.workload.normalize.RAW_COLUMNS` lists them.
pub const RAW_COLUMNS: [&str; 8] = ["job_id", "submit_s", "runtime_s", "walltime_s", "procs_alloc", "procs_req", "nodes_alloc", "line"];

/// The raw columns of a log (all the same length; -1 is unknown). Borrowed: a reader's
/// vectors or a NumPy array's memory are used as they are.
#[derive(Clone, Copy, Debug)]
pub struct RawColumns<'a> {
    pub job_id: &'a [i64],
    pub submit_s: &'a [i64],
    pub runtime_s: &'a [i64],
    pub walltime_s: &'a [i64],
    pub procs_alloc: &'a [i64],
    pub procs_req: &'a [i64],
    pub nodes_alloc: &'a [i64],
    /// 1-based line of each record in the source file.
    pub line: &'a [i64],
}

impl<'a> RawColumns<'a> {
    /// Rows, or an error naming the first column whose length differs from `job_id`'s.
    pub fn len(&self) -> Result<usize, String> {
        let n = self.job_id.len();
        for (name, col) in RAW_COLUMNS.iter().zip(self.columns()) {
            if col.len() != n {
                return Err(format!("raw column '{name}' has {} rows, job_id has {n}", col.len()));
            }
        }
        Ok(n)
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.job_id.is_empty()
    }

    fn columns(&self) -> [&'a [i64]; 8] {
        [self.job_id, self.submit_s, self.runtime_s, self.walltime_s, self.procs_alloc, self.procs_req, self.nodes_alloc, self.line]
    }
}

/// Which processor field a job's size comes from (`NormalizeSettings.size_field`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeField {
    /// Allocated, falling back to requested when allocated is unknown.
    Auto,
    Allocated,
    Requested,
}

/// What an unknown requested time becomes (`NormalizeSettings.missing_walltime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingWalltime {
    /// The run time (at least 1 s): a perfect estimate.
    Runtime,
    /// This many seconds.
    Seconds(i64),
}

/// What happens to a job whose run time is unknown (`NormalizeSettings.missing_runtime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingRuntime {
    /// Left out, counted as `unknown_runtime`.
    Skip,
    /// Kept with run time 0, counted as `runtime_set_zero`.
    Zero,
}

/// `toposched.workload.normalize.NormalizeSettings`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// At least 1.
    pub cores_per_node: i64,
    pub size_field: SizeField,
    pub missing_walltime: MissingWalltime,
    pub missing_runtime: MissingRuntime,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { cores_per_node: 1, size_field: SizeField::Auto, missing_walltime: MissingWalltime::Runtime, missing_runtime: MissingRuntime::Skip }
    }
}

/// Everything about the read besides the columns and the settings.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The file read, as messages name it.
    pub source: String,
    /// Unix time of submit 0, when the log gives it (wide: a header may write any number).
    pub time_origin_epoch_s: Option<i128>,
    /// How messages write the time origin, when not as `time_origin_epoch_s` (a caller
    /// that had to clamp a number too big for i128).
    pub time_origin_text: Option<String>,
    /// Leave out (and count) values out of range instead of stopping.
    pub lenient: bool,
    /// Raise the 50-year limits to the whole 1970-2200 window.
    pub allow_long_span: bool,
    /// The format's own name of a raw column, for messages (`(column, name)`; a column
    /// not listed is named as itself).
    pub field_names: Vec<(String, String)>,
}

impl Options {
    fn field(&self, column: &str) -> String {
        self.field_names.iter().find(|(c, _)| c == column).map_or(column, |(_, f)| f.as_str()).to_string()
    }
}

/// A value out of range: what `toposched.errors.TraceFormatError(source, message,
/// line=line, field=field)` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormalizeError {
    pub source: String,
    pub message: String,
    pub line: Option<i64>,
    pub field: Option<String>,
}

impl std::fmt::Display for NormalizeError {
    /// The one line a user sees, as `toposched.errors.InputError` writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.source)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "field '{field}': ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for NormalizeError {}

/// Counts by name in the order names first appear, as the Python dicts `repairs` and
/// `skipped` keep them (the run summary writes them in that order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub Vec<(String, i64)>);

impl Counts {
    /// Add `n` to `key` (a zero adds no key, as `_count` in Python).
    pub fn add(&mut self, key: &str, n: usize) {
        if n == 0 {
            return;
        }
        let n = n as i64;
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v += n,
            None => self.0.push((key.to_string(), n)),
        }
    }

    /// The count of `key` (0 when absent).
    pub fn get(&self, key: &str) -> i64 {
        self.0.iter().find(|(k, _)| k == key).map_or(0, |(_, v)| *v)
    }
}

/// The normalized table: one row per job kept, sorted by submit (ties in file order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Normalized {
    /// The raw row behind each output row (how extra per-job columns follow the rows).
    pub order: Vec<usize>,
    pub job_id: Vec<i64>,
    pub submit_s: Vec<i64>,
    pub nodes: Vec<i64>,
    pub walltime_s: Vec<i64>,
    pub runtime_s: Vec<i64>,
    pub procs: Vec<i64>,
    pub line: Vec<i64>,
    /// The id columns given, in the same order, taken in `order`; an id the engine
    /// cannot hold is -1 (counted as `id_out_of_range`).
    pub ids: Vec<Vec<i64>>,
    /// With `lenient`: the first few values left out, "line L: field F: why".
    pub out_of_range_examples: Vec<String>,
}

/// Rows whose values are within the documented limits (`toposched.workload.normalize.
/// check_ranges`: same rules, order and messages). Without `lenient` the first row out of
/// range of the first rule broken is an error; with it such rows are left out and the
/// first few quoted in `examples` (up to [`MAX_EXAMPLES`] in all).
///
/// `submit_span` (a log normalized a chunk at a time): the smallest and largest submit
/// the outlier rule looks at, across chunks, instead of the median of the whole log
/// (which a chunk does not know); it is updated even when the span is refused.
pub fn check_ranges(
    raw: &RawColumns<'_>,
    opts: &Options,
    examples: &mut Vec<String>,
    submit_span: Option<&mut Option<(i64, i64)>>,
) -> Result<Vec<bool>, NormalizeError> {
    let n = raw.len().map_err(|message| NormalizeError { source: opts.source.clone(), message, line: None, field: None })?;
    let max_time = if opts.allow_long_span { MAX_SPAN_LONG_S } else { MAX_SPAN_S };
    let span_hint = if opts.allow_long_span { "" } else { "; pass --allow-long-span to accept it" };
    let mut ok = vec![true; n];
    let submit = raw.submit_s;
    let limit = years(max_time);
    // i128: an origin is any number a header writes, and origin + submit must not wrap
    let window = opts.time_origin_epoch_s.map(|origin| (EPOCH_MIN_S as i128 - origin, EPOCH_MAX_S as i128 - origin));
    let outside_window = |i: usize| window.is_some_and(|(lo, hi)| submit[i] >= 0 && ((submit[i] as i128) < lo || submit[i] as i128 >= hi));

    // The rules below, one after the other; a whole log is almost always within every
    // limit, which one pass finds out.
    let any_broken = (0..n).any(|i| raw.runtime_s[i] > max_time || raw.walltime_s[i] > MAX_TIME_S || submit[i] > MAX_SPAN_LONG_S || outside_window(i));
    if any_broken {
        let rule = Rule { raw, opts, n };
        rule.refuse(&mut ok, examples, |i| raw.runtime_s[i] > max_time, "runtime_s", raw.runtime_s, span_hint, |v| {
            format!("{v} s is longer than the limit of {limit}")
        })?;
        // A requested time only bounds reservations (logs write 2^31 - 1 for "unlimited"):
        // it must just fit the engine's arithmetic.
        rule.refuse(&mut ok, examples, |i| raw.walltime_s[i] > MAX_TIME_S, "walltime_s", raw.walltime_s, "", |v| format!("{v} s is beyond the limit of 2^53 s"))?;
        if let Some(origin) = opts.time_origin_epoch_s {
            let origin_text = opts.time_origin_text.clone().unwrap_or_else(|| origin.to_string());
            rule.refuse(&mut ok, examples, outside_window, "submit_s", submit, "", |v| {
                format!("{v} s after the log's time origin (Unix time {origin_text}) is outside 1970-2200")
            })?;
        }
        rule.refuse(&mut ok, examples, |i| submit[i] > MAX_SPAN_LONG_S, "submit_s", submit, "", |v| format!("{v} s after the log's time origin is beyond 2200"))?;
    }

    // One stray timestamp (a year typed 2300, a field cut short) would stretch the replay
    // over centuries: submits far from the median one are outliers. Submits looked at
    // here are known and in range: 0 <= submit <= MAX_SPAN_LONG_S, so no sum can wrap.
    let kept = |ok: &[bool], i: usize| ok[i] && submit[i] >= 0;
    let Some((lo_s, hi_s)) = (0..n).filter(|&i| kept(&ok, i)).map(|i| (submit[i], submit[i])).reduce(|(a, b), (c, d)| (a.min(c), b.max(d))) else {
        return Ok(ok);
    };
    if let Some(span) = submit_span {
        let (lo_s, hi_s) = match *span {
            Some((a, b)) => (lo_s.min(a), hi_s.max(b)),
            None => (lo_s, hi_s),
        };
        *span = Some((lo_s, hi_s));
        if hi_s as i128 - lo_s as i128 > max_time as i128 {
            // one of the two ends is a submit of this chunk: the span was within the
            // limit before it
            let i = (0..n).find(|&i| kept(&ok, i) && (submit[i] == lo_s || submit[i] == hi_s)).unwrap_or(0);
            return Err(NormalizeError {
                source: opts.source.clone(),
                message: format!(
                    "the submits span more than {limit} (from {lo_s} s to {hi_s} s): outliers are found from the median submit of the whole log, \
                     which --stream does not know; replay without --stream{}",
                    if opts.allow_long_span { "" } else { " (or pass --allow-long-span)" }
                ),
                line: raw.line.get(i).copied(),
                field: Some(opts.field("submit_s")),
            });
        }
        return Ok(ok);
    }
    if hi_s - lo_s <= max_time {
        return Ok(ok); // the median lies between them: no submit is farther from it
    }
    let median = median_floor((0..n).filter(|&i| kept(&ok, i)).map(|i| submit[i]).collect());
    let far: Vec<bool> = (0..n).map(|i| kept(&ok, i) && (submit[i] - median).abs() > max_time).collect();
    Rule { raw, opts, n }.refuse(&mut ok, examples, |i| far[i], "submit_s", submit, span_hint, |v| {
        format!("{v} s is more than {limit} from the median submit ({median} s): an outlier")
    })?;
    Ok(ok)
}

/// What every range rule needs to refuse a row.
struct Rule<'r, 'a> {
    raw: &'r RawColumns<'a>,
    opts: &'r Options,
    n: usize,
}

impl Rule<'_, '_> {
    /// The rows of `bad` still in range are refused: an error for the first, or (with
    /// `lenient`) left out, the first few quoted. `why` writes the reason for a value.
    #[allow(clippy::too_many_arguments)]
    fn refuse(
        &self,
        ok: &mut [bool],
        examples: &mut Vec<String>,
        bad: impl Fn(usize) -> bool,
        column: &str,
        values: &[i64],
        hint: &str,
        why: impl Fn(i64) -> String,
    ) -> Result<(), NormalizeError> {
        let mut field: Option<String> = None;
        for i in 0..self.n {
            if !ok[i] || !bad(i) {
                continue;
            }
            let field = field.get_or_insert_with(|| self.opts.field(column));
            if !self.opts.lenient {
                return Err(NormalizeError {
                    source: self.opts.source.clone(),
                    message: format!("{}{hint}, or --lenient to leave such jobs out", why(values[i])),
                    line: Some(self.raw.line[i]),
                    field: Some(field.clone()),
                });
            }
            if examples.len() < MAX_EXAMPLES {
                examples.push(format!("line {}: field {field}: {}", self.raw.line[i], why(values[i])));
            }
            ok[i] = false;
        }
        Ok(())
    }
}

/// `int(numpy.median(values))` for values in 0..2^53 (every one exact as a float): the
/// middle value, or the two middle ones' mean rounded down.
fn median_floor(mut values: Vec<i64>) -> i64 {
    let n = values.len();
    let (_, &mut upper, _) = values.select_nth_unstable(n / 2);
    if n % 2 == 1 {
        return upper;
    }
    let lower = values[..n / 2].iter().copied().max().unwrap_or(upper);
    (lower + upper) / 2
}

/// The rules of `toposched.workload.normalize.normalize`, in its order, on `raw`: the
/// table kept, or the error the Python code raises. `repairs` and `skipped` may already
/// hold a reader's counts; the rules add to them. `ids` are id columns (user, account,
/// QOS, partition, in the caller's order) carried through the rows; `submit_span`: see
/// [`check_ranges`].
pub fn normalize(
    raw: &RawColumns<'_>,
    ids: &[&[i64]],
    settings: &Settings,
    opts: &Options,
    repairs: &mut Counts,
    skipped: &mut Counts,
    submit_span: Option<&mut Option<(i64, i64)>>,
) -> Result<Normalized, NormalizeError> {
    let n = raw.len().map_err(|message| NormalizeError { source: opts.source.clone(), message, line: None, field: None })?;
    if let Some(bad) = ids.iter().find(|c| c.len() != n) {
        return Err(NormalizeError {
            source: opts.source.clone(),
            message: format!("an id column has {} rows, the raw columns have {n}", bad.len()),
            line: None,
            field: None,
        });
    }
    assert!(settings.cores_per_node >= 1, "cores_per_node must be >= 1, got {}", settings.cores_per_node);
    let mut examples = Vec::new();
    let in_range = check_ranges(raw, opts, &mut examples, submit_span)?;
    let cpn = settings.cores_per_node;
    let mut examples_left = if opts.lenient { MAX_EXAMPLES.saturating_sub(examples.len()) } else { 1 };

    // Every rule row by row, in one pass (the counts are added in the rules' order below).
    #[derive(Default)]
    struct Tally {
        size_from_requested: usize,
        nodes_rounded_up: usize,
        out_of_range: usize,
        unknown_size: usize,
        unknown_runtime: usize,
        runtime_set_zero: usize,
        walltime_repaired: usize,
        unknown_submit: usize,
    }
    let mut t = Tally::default();
    let mut out = Normalized { out_of_range_examples: Vec::new(), ..Normalized::default() };
    for (i, &row_in_range) in in_range.iter().enumerate() {
        // 1. size: the processor field it comes from, then nodes
        let from_requested = raw.procs_alloc[i] <= 0 && raw.procs_req[i] > 0 && raw.nodes_alloc[i] <= 0;
        let procs = match settings.size_field {
            SizeField::Allocated => raw.procs_alloc[i],
            SizeField::Requested => raw.procs_req[i],
            SizeField::Auto if from_requested => {
                t.size_from_requested += 1;
                raw.procs_req[i]
            }
            SizeField::Auto => raw.procs_alloc[i],
        };
        let from_nodes = raw.nodes_alloc[i] > 0;
        // ceil(procs / cpn) of procs >= 0 (negative procs: 0), as -(-p // cpn)
        let nodes = if from_nodes { raw.nodes_alloc[i] } else { -(-procs.max(0)).div_euclid(cpn) };
        if cpn > 1 && !from_nodes && procs > 0 && procs % cpn != 0 {
            t.nodes_rounded_up += 1;
        }
        if !row_in_range {
            t.out_of_range += 1;
            continue;
        }
        // Counts must fit the engine's 32-bit node counts (only the fields the size comes
        // from: a requested count the job does not use is not looked at).
        if nodes >= MAX_COUNT || procs >= MAX_COUNT {
            t.out_of_range += 1;
            if examples_left > 0 {
                examples_left -= 1;
                let (v, field) = too_big(raw, settings, opts, i, from_nodes && nodes >= MAX_COUNT, from_requested);
                if !opts.lenient {
                    return Err(NormalizeError {
                        source: opts.source.clone(),
                        message: format!("{v} is out of range: counts must be below 2^31, or --lenient to leave such jobs out"),
                        line: Some(raw.line[i]),
                        field: Some(field),
                    });
                }
                examples.push(format!("line {}: field {field}: {v} is out of range (counts below 2^31)", raw.line[i]));
            }
            continue;
        }
        if nodes <= 0 {
            t.unknown_size += 1;
            continue;
        }
        // 2. run time unknown
        let mut runtime = raw.runtime_s[i];
        if runtime < 0 {
            match settings.missing_runtime {
                MissingRuntime::Skip => {
                    t.unknown_runtime += 1;
                    continue;
                }
                MissingRuntime::Zero => {
                    t.runtime_set_zero += 1;
                    runtime = 0;
                }
            }
        }
        // 3. requested time unknown
        let mut walltime = raw.walltime_s[i];
        if walltime <= 0 {
            t.walltime_repaired += 1;
            walltime = match settings.missing_walltime {
                MissingWalltime::Runtime => runtime.max(1),
                MissingWalltime::Seconds(s) => s,
            };
        }
        // 5. submit unknown
        if raw.submit_s[i] < 0 {
            t.unknown_submit += 1;
            continue;
        }
        out.order.push(i);
        out.nodes.push(nodes);
        out.walltime_s.push(walltime);
        out.runtime_s.push(runtime);
        out.procs.push(procs.max(0));
    }
    repairs.add("size_from_requested", t.size_from_requested);
    repairs.add("nodes_rounded_up", t.nodes_rounded_up);
    skipped.add("out_of_range", t.out_of_range);
    skipped.add("unknown_size", t.unknown_size);
    skipped.add("unknown_runtime", t.unknown_runtime);
    repairs.add("runtime_set_zero", t.runtime_set_zero);
    match settings.missing_walltime {
        MissingWalltime::Runtime => repairs.add("walltime_from_runtime", t.walltime_repaired),
        MissingWalltime::Seconds(_) => repairs.add("walltime_set_default", t.walltime_repaired),
    }
    skipped.add("unknown_submit", t.unknown_submit);

    // 6. stable sort by submit (ties keep file order)
    let submit_of = |i: usize| raw.submit_s[i];
    let unsorted = out.order.windows(2).filter(|w| submit_of(w[1]) < submit_of(w[0])).count();
    repairs.add("submit_unsorted", unsorted);
    if unsorted > 0 {
        let mut perm: Vec<usize> = (0..out.order.len()).collect();
        perm.sort_by_key(|&k| submit_of(out.order[k])); // stable
        let permute = |col: &[i64]| -> Vec<i64> { perm.iter().map(|&k| col[k]).collect() };
        out.nodes = permute(&out.nodes);
        out.walltime_s = permute(&out.walltime_s);
        out.runtime_s = permute(&out.runtime_s);
        out.procs = permute(&out.procs);
        out.order = perm.iter().map(|&k| out.order[k]).collect();
    }
    let take = |col: &[i64]| -> Vec<i64> { out.order.iter().map(|&i| col[i]).collect() };
    out.job_id = take(raw.job_id);
    out.submit_s = take(raw.submit_s);
    out.line = take(raw.line);
    for col in ids {
        // an id the engine cannot hold (a u32 below 2^32 - 1) is unknown, like SWF's -1
        let taken: Vec<i64> = take(col).into_iter().map(|v| if (-1..=MAX_ID).contains(&v) { v } else { -1 }).collect();
        let bad = out.order.iter().filter(|&&i| !(-1..=MAX_ID).contains(&col[i])).count();
        repairs.add("id_out_of_range", bad);
        out.ids.push(taken);
    }
    out.out_of_range_examples = examples;
    Ok(out)
}

/// The value and field named when row `i`'s size is past 2^31: the node count when the
/// size comes from it and it is the one (a processor count past 2^31 beside a small
/// NNodes was reported as "NNodes: 32 is out of range"), else the processor field the
/// size comes from.
fn too_big(raw: &RawColumns<'_>, settings: &Settings, opts: &Options, i: usize, nodes_too_big: bool, from_requested: bool) -> (i64, String) {
    let column = if nodes_too_big {
        "nodes_alloc"
    } else if settings.size_field == SizeField::Requested || (settings.size_field == SizeField::Auto && from_requested) {
        "procs_req"
    } else {
        "procs_alloc"
    };
    let v = match column {
        "nodes_alloc" => raw.nodes_alloc[i],
        "procs_req" => raw.procs_req[i],
        _ => raw.procs_alloc[i],
    };
    (v, opts.field(column))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Raw {
        cols: [Vec<i64>; 8],
    }

    impl Raw {
        /// Columns of `n` rows, -1 throughout but job_id (0..) and line (1..).
        fn new(n: usize) -> Raw {
            let mut cols: [Vec<i64>; 8] = Default::default();
            for c in cols.iter_mut() {
                *c = vec![-1; n];
            }
            cols[0] = (0..n as i64).collect();
            cols[7] = (1..=n as i64).collect();
            Raw { cols }
        }
        fn set(mut self, column: &str, values: &[i64]) -> Raw {
            let k = RAW_COLUMNS.iter().position(|c| *c == column).unwrap();
            self.cols[k] = values.to_vec();
            self
        }
        fn view(&self) -> RawColumns<'_> {
            let c = &self.cols;
            RawColumns { job_id: &c[0], submit_s: &c[1], runtime_s: &c[2], walltime_s: &c[3], procs_alloc: &c[4], procs_req: &c[5], nodes_alloc: &c[6], line: &c[7] }
        }
    }

    fn run(raw: &Raw, settings: Settings, opts: &Options) -> Result<(Normalized, Counts, Counts), NormalizeError> {
        let (mut repairs, mut skipped) = (Counts::default(), Counts::default());
        normalize(&raw.view(), &[], &settings, opts, &mut repairs, &mut skipped, None).map(|w| (w, repairs, skipped))
    }

    fn opts() -> Options {
        Options { source: "log.swf".into(), ..Options::default() }
    }

    fn counts(pairs: &[(&str, i64)]) -> Counts {
        Counts(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())
    }

    #[test]
    fn every_rule_counts_what_it_does() {
        // the example of tests/test_normalize.py, worked by hand
        let raw = Raw::new(7)
            .set("submit_s", &[5, 3, 4, -1, 6, 7, 8])
            .set("runtime_s", &[10, -1, 10, 10, 10, 30, 10])
            .set("walltime_s", &[20, 20, -1, 20, 0, 20, 20])
            .set("procs_alloc", &[8, 4, -1, 4, 4, 4, -1])
            .set("procs_req", &[8, 4, 6, 4, 4, 4, -1]);
        let (w, repairs, skipped) = run(&raw, Settings { cores_per_node: 4, ..Settings::default() }, &opts()).unwrap();
        assert_eq!(skipped, counts(&[("unknown_size", 1), ("unknown_runtime", 1), ("unknown_submit", 1)]));
        assert_eq!(repairs, counts(&[("size_from_requested", 1), ("nodes_rounded_up", 1), ("walltime_from_runtime", 2), ("submit_unsorted", 1)]));
        assert_eq!(w.job_id, [2, 0, 4, 5]);
        assert_eq!(w.nodes, [2, 2, 1, 1]);
        assert_eq!(w.walltime_s, [10, 20, 10, 20]);
        assert_eq!(w.runtime_s, [10, 10, 10, 30]);
        assert_eq!(w.procs, [6, 8, 4, 4]);
        assert_eq!(w.order, [2, 0, 4, 5]);
    }

    #[test]
    fn a_runtime_past_50_years_names_line_field_and_flags() {
        let raw = Raw::new(2).set("submit_s", &[0, 0]).set("runtime_s", &[1, MAX_SPAN_S + 1]).set("procs_alloc", &[1, 1]);
        let mut o = opts();
        o.field_names = vec![("runtime_s".into(), "run time (field 4)".into())];
        let err = run(&raw, Settings::default(), &o).unwrap_err();
        assert_eq!(
            err.to_string(),
            "log.swf:2: field 'run time (field 4)': 1576800001 s is longer than the limit of 50.0 years; \
             pass --allow-long-span to accept it, or --lenient to leave such jobs out"
        );
        o.allow_long_span = true;
        assert!(run(&raw, Settings::default(), &o).is_ok());
        o.allow_long_span = false;
        o.lenient = true;
        let (w, _, skipped) = run(&raw, Settings::default(), &o).unwrap();
        assert_eq!(w.job_id, [0]);
        assert_eq!(skipped, counts(&[("out_of_range", 1)]));
        assert_eq!(w.out_of_range_examples, ["line 2: field run time (field 4): 1576800001 s is longer than the limit of 50.0 years"]);
    }

    #[test]
    fn an_outlier_is_measured_from_the_median() {
        // submits 0, 10, 20 and one 51 years later: the median is 15 (mean of 10 and 20)
        let late = 51 * 365 * 86_400;
        let raw = Raw::new(4).set("submit_s", &[0, 10, 20, late]).set("runtime_s", &[1; 4]).set("procs_alloc", &[1; 4]);
        let err = run(&raw, Settings::default(), &opts()).unwrap_err();
        assert_eq!(err.line, Some(4));
        assert!(err.message.starts_with(&format!("{late} s is more than 50.0 years from the median submit (15 s): an outlier")), "{}", err.message);
    }

    #[test]
    fn a_count_past_2_31_names_the_field_the_size_comes_from() {
        let raw = Raw::new(2).set("submit_s", &[0, 0]).set("runtime_s", &[1, 1]).set("procs_alloc", &[-1, 1]).set("procs_req", &[MAX_COUNT, 1]);
        let err = run(&raw, Settings::default(), &opts()).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("procs_req"));
        assert_eq!(err.message, "2147483648 is out of range: counts must be below 2^31, or --lenient to leave such jobs out");
        // with the allocated field, the huge request is not looked at: size unknown
        let (w, _, skipped) = run(&raw, Settings { size_field: SizeField::Allocated, ..Settings::default() }, &opts()).unwrap();
        assert_eq!(w.job_id, [1]);
        assert_eq!(skipped, counts(&[("unknown_size", 1)]));
    }

    #[test]
    fn a_streamed_span_past_the_limit_is_refused_even_when_lenient() {
        let raw = Raw::new(1).set("submit_s", &[MAX_SPAN_S + 5]).set("runtime_s", &[1]).set("procs_alloc", &[1]);
        let mut span = Some((4, 4));
        let mut o = opts();
        o.lenient = true;
        let (mut r, mut s) = (Counts::default(), Counts::default());
        let err = normalize(&raw.view(), &[], &Settings::default(), &o, &mut r, &mut s, Some(&mut span)).unwrap_err();
        assert_eq!(span, Some((4, MAX_SPAN_S + 5)));
        assert!(err.message.ends_with("replay without --stream (or pass --allow-long-span)"), "{}", err.message);
    }

    #[test]
    fn median_floor_is_numpys() {
        assert_eq!(median_floor(vec![3]), 3);
        assert_eq!(median_floor(vec![4, 1]), 2);
        assert_eq!(median_floor(vec![5, 1, 2, 9]), 3);
        assert_eq!(median_floor(vec![7, 7, 1]), 7);
    }
}
