//! The documented limits every log value is checked against (docs/reliability.md), defined
//! once here: `toposched.limits` takes its values from these (through `toposched._core`),
//! so the Python readers and the native normalize cannot disagree.

/// Earliest absolute time a log may give (Unix seconds): 1970-01-01 UTC.
pub const EPOCH_MIN_S: i64 = 0;

/// Latest absolute time a log may give, not included (Unix seconds): 2200-01-01 UTC.
pub const EPOCH_MAX_S: i64 = 7_258_118_400;

/// Longest span of submit times, and longest run time, of one log unless
/// `--allow-long-span`: 50 years (real logs cover a few years; a value beyond this is
/// almost always a corrupt field, e.g. a year typed 2300).
pub const MAX_SPAN_S: i64 = 50 * 365 * 86_400;

/// With `--allow-long-span`: the whole time window.
pub const MAX_SPAN_LONG_S: i64 = EPOCH_MAX_S - EPOCH_MIN_S;

/// Largest time any field may hold (the engine's own limit, 2^53 s).
pub const MAX_TIME_S: i64 = toposched_core::workload::MAX_TIME_S;

/// Counts (processors, nodes) must be below this (2^31).
pub const MAX_COUNT: i64 = 1 << 31;

/// Every limit by the name `toposched.limits` gives it.
pub const ALL: [(&str, i64); 6] = [
    ("EPOCH_MIN_S", EPOCH_MIN_S),
    ("EPOCH_MAX_S", EPOCH_MAX_S),
    ("MAX_SPAN_S", MAX_SPAN_S),
    ("MAX_SPAN_LONG_S", MAX_SPAN_LONG_S),
    ("MAX_TIME_S", MAX_TIME_S),
    ("MAX_COUNT", MAX_COUNT),
];

/// A span in years, for messages: what `toposched.limits.years` writes (one decimal;
/// both languages round the exact binary value to nearest, ties to even).
pub fn years(seconds: i64) -> String {
    format!("{:.1} years", seconds as f64 / (365.25 * 86_400.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_max_is_2200_01_01() {
        // days from 1970-01-01 to 2200-01-01: 230 years, of which leap years are those
        // divisible by 4 in 1972..=2196 (57), minus 2100 (not a leap year): 56
        let days = 230 * 365 + 56;
        assert_eq!(EPOCH_MAX_S, days * 86_400);
    }

    #[test]
    fn years_of_the_limits() {
        assert_eq!(years(MAX_SPAN_S), "50.0 years");
        assert_eq!(years(MAX_SPAN_LONG_S), "230.0 years");
        assert_eq!(years(0), "0.0 years");
    }
}
