//! Invariants of normalize on random raw columns (tests/test_normalize_native.py compares
//! it value by value with the former Python rules; these hold whatever the rules' details):
//! every record is kept or counted once, the table is what the engine accepts (sorted by
//! submit, ties in file order; nodes, limits >= 1; run times >= 0), a row kept is the
//! raw row it names, lenient reads never stop on a value, and a strict read stops exactly
//! when the lenient one leaves values out.

use proptest::prelude::*;
use toposched_io::limits::{MAX_COUNT, MAX_SPAN_LONG_S, MAX_SPAN_S, MAX_TIME_S};
use toposched_io::normalize::{normalize, Counts, MissingRuntime, MissingWalltime, Normalized, NormalizeError, Options, RawColumns, Settings, SizeField};

fn value() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -1i64..20,
        1 => prop::sample::select(vec![MAX_SPAN_S, MAX_SPAN_S + 1, MAX_SPAN_LONG_S, MAX_SPAN_LONG_S + 1, MAX_TIME_S, MAX_TIME_S + 1, MAX_COUNT - 1, MAX_COUNT]),
        1 => any::<i64>(),
    ]
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        prop::sample::select(vec![1i64, 2, 3, 16]),
        prop::sample::select(vec![SizeField::Auto, SizeField::Allocated, SizeField::Requested]),
        prop_oneof![Just(MissingWalltime::Runtime), (1i64..100_000).prop_map(MissingWalltime::Seconds)],
        prop::sample::select(vec![MissingRuntime::Skip, MissingRuntime::Zero]),
    )
        .prop_map(|(cores_per_node, size_field, missing_walltime, missing_runtime)| Settings { cores_per_node, size_field, missing_walltime, missing_runtime })
}

/// Seven raw columns of random values, and lines 1..=n.
fn columns() -> impl Strategy<Value = Vec<Vec<i64>>> {
    (0usize..30).prop_flat_map(|n| prop::collection::vec(prop::collection::vec(value(), n), 7)).prop_map(|mut cols| {
        let n = cols[0].len();
        cols.push((1..=n as i64).collect());
        cols
    })
}

fn view(c: &[Vec<i64>]) -> RawColumns<'_> {
    RawColumns { job_id: &c[0], submit_s: &c[1], runtime_s: &c[2], walltime_s: &c[3], procs_alloc: &c[4], procs_req: &c[5], nodes_alloc: &c[6], line: &c[7] }
}

fn run(c: &[Vec<i64>], s: &Settings, lenient: bool, allow_long_span: bool) -> (Result<Normalized, NormalizeError>, Counts, Counts) {
    let opts = Options { source: "p.swf".into(), lenient, allow_long_span, time_origin_epoch_s: Some(1_000_000_000), ..Options::default() };
    let (mut repairs, mut skipped) = (Counts::default(), Counts::default());
    let ids: Vec<&[i64]> = vec![&c[0]];
    let got = normalize(&view(c), &ids, s, &opts, &mut repairs, &mut skipped, None);
    (got, repairs, skipped)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_record_is_kept_or_counted_and_the_table_is_replayable(c in columns(), s in settings(), allow_long_span in any::<bool>()) {
        let n = c[0].len();
        let (lenient, repairs, skipped) = run(&c, &s, true, allow_long_span);
        let w = lenient.expect("a lenient read leaves values out, it never stops");
        let left_out: i64 = skipped.0.iter().map(|(_, v)| v).sum();
        prop_assert_eq!(w.order.len() as i64 + left_out, n as i64);
        for col in [&w.job_id, &w.submit_s, &w.nodes, &w.walltime_s, &w.runtime_s, &w.procs, &w.line, &w.ids[0]] {
            prop_assert_eq!(col.len(), w.order.len());
        }
        for k in 0..w.order.len() {
            let i = w.order[k];
            prop_assert_eq!(w.job_id[k], c[0][i]);
            prop_assert_eq!(w.submit_s[k], c[1][i]);
            prop_assert_eq!(w.line[k], c[7][i]);
            prop_assert!(w.submit_s[k] >= 0 && w.submit_s[k] <= MAX_SPAN_LONG_S);
            prop_assert!(w.nodes[k] >= 1 && w.nodes[k] < MAX_COUNT);
            prop_assert!(w.procs[k] >= 0 && w.procs[k] < MAX_COUNT);
            prop_assert!(w.walltime_s[k] >= 1);
            let max_run = if allow_long_span { MAX_SPAN_LONG_S } else { MAX_SPAN_S };
            prop_assert!(w.runtime_s[k] >= 0 && w.runtime_s[k] <= max_run);
            prop_assert!((-1..=toposched_io::normalize::MAX_ID).contains(&w.ids[0][k]));
            if k > 0 {
                // sorted by submit, ties in file order (the lines here are the rows' order)
                prop_assert!((w.submit_s[k - 1], w.line[k - 1]) < (w.submit_s[k], w.line[k]));
            }
        }
        prop_assert!(w.out_of_range_examples.len() <= 5);
        prop_assert_eq!(w.out_of_range_examples.len() as i64, skipped.get("out_of_range").min(5));
        prop_assert!(repairs.0.iter().chain(&skipped.0).all(|(_, v)| *v > 0));

        // strict: the same table when nothing is out of range, else one error naming a line
        let (strict, strict_repairs, strict_skipped) = run(&c, &s, false, allow_long_span);
        match strict {
            Ok(ws) => {
                prop_assert_eq!(skipped.get("out_of_range"), 0);
                prop_assert_eq!(ws, w);
                prop_assert_eq!(strict_repairs, repairs);
                prop_assert_eq!(strict_skipped, skipped);
            }
            Err(e) => {
                prop_assert!(skipped.get("out_of_range") > 0);
                let line = e.line.expect("a value out of range names its line");
                prop_assert!(line >= 1 && line <= n as i64);
                let start = format!("p.swf:{line}: field '");
                prop_assert!(e.to_string().starts_with(&start), "{}", e);
                prop_assert!(e.message.ends_with(", or --lenient to leave such jobs out"), "{}", e.message);
            }
        }
    }
}
